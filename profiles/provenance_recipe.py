"""The ``provenance:`` section of every shipped profile, written from profiles/inputs.yaml.

Each group of ``inputs.yaml`` becomes one item of the vocabulary of ``clustersim/config/provenance.py``:

* a group with ``files`` -> ``measured`` (``fitted`` where ``fitted: true``: a model fitted to the files), with the
  group's machine and date; its held-out error is the one that checked the figures resting on it: the
  collectives' band (``uncertainty.time_factor``, profiles/collective_band.py) for collective entries and the link
  model, the host's measured spread (``host.speed_band.time_factor``) for host costs, and the kernel tables'
  held-out steps (``compute_held_out`` of the profile in inputs.yaml) for compute;
* ``from: <profile>`` -> ``transferred``, with ``transfer_rule`` of inputs.yaml (the rule and its
  leave-one-GPU-out error);
* ``band: <name>`` -> the uncertainty section: ``measured`` for a band taken on this project's own bench,
  ``published`` for one taken on logs handed to it;
* ``published: <source>`` and ``assumed: <note>`` -> those classes, for the link-class constants and defaults.

An error is ``time_factor - 1`` where the held-out check states a factor (a relative half-width, slightly wider
than ``log(time_factor)``). :func:`provenance_section` fails on a shipped entry no group names, so a new field
of a profile needs its line in inputs.yaml before ``make_profiles.py --check`` passes.
"""

from __future__ import annotations

import yaml

from recipe_base import PROFILES

INPUTS = PROFILES / "inputs.yaml"


def _inputs() -> dict:
    return yaml.safe_load(INPUTS.read_text(encoding="utf-8"))


def _err(factor: float | None) -> float | None:
    return None if factor is None else round(float(factor) - 1.0, 4)


def _held_out(fields: list[str], data: dict, doc: dict, name: str) -> tuple[float | None, str | None]:
    """(error, which data) of the held-out check that covers a measured group's ``fields``."""
    unc = data.get("uncertainty") or {}
    band = (data.get("host") or {}).get("speed_band") or {}
    head = fields[0].split(".")[0]   # a group's first field says what it is (a kernel sweep may also give host.comm_init)
    if head in ("collectives", "link_model"):
        return _err(unc.get("time_factor")), "the collectives' held-out band (uncertainty.method)"
    if head == "host":
        return _err(band.get("time_factor")), "the host's measured spread (host.speed_band.method)"
    if head == "compute":
        held = (doc.get("compute_held_out") or {}).get(name)
        if held:
            return float(held["error"]), held["rows"]
    return None, None


#: where the published band comes from (profiles/collective_band.py, band ``published`` of inputs.yaml)
PUBLISHED_BAND = ("NCCL's published link classes against real nccl-tests all_reduce logs of A100 nodes (8, 16, 32 GPUs): "
                  "the published band of profiles/collective_band.py")


def provenance_section(name: str, data: dict, published_band: float, doc: dict | None = None) -> list[dict]:
    """The ``provenance`` items of profile ``name`` (``data``: the profile as written, parsed), from inputs.yaml;
    ``published_band``: the time factor of the published link classes' band (collective_band.py).

    Raises ValueError naming every entry of ``data`` that no group covers.
    """
    from clustersim.config.provenance import Provenance, entries_of, lookup

    doc = doc or _inputs()
    groups = doc["profiles"][name]
    bands = doc.get("bands") or {}
    rule = doc["transfer_rule"]
    out = []
    for g in groups:
        item: dict = {"fields": list(g["fields"])}
        if "files" in g:
            item.update(kind="fitted" if g.get("fitted") else "measured", files=list(g["files"]),
                        machine=" ".join(str(g["machine"]).split()), date=str(g["date"]))
            err, held = _held_out(g["fields"], data, doc, name)
            if err is not None:
                item.update(held_out_error=err, held_out=held)
            elif item["kind"] == "fitted":
                raise ValueError(f"{name}: fitted {g['fields']} without a held-out error")
        elif "from" in g:
            source = yaml.safe_load((PROFILES / f"{g['from']}.yaml").read_text(encoding="utf-8")).get("source") or {}
            gpu = source.get("gpu") or g["from"]
            item.update(kind="transferred", from_profile=g["from"], from_gpu=gpu, rule=" ".join(rule["rule"].split()),
                        leave_one_gpu_out_error=float(rule["leave_one_gpu_out_error"]),
                        note=" ".join(rule["note"].split()))
        elif "band" in g:
            b = bands[g["band"]]
            b = bands[b["same_as"]] if "same_as" in b else b
            err = _err((data.get("uncertainty") or {}).get("time_factor"))
            if g["band"] == "measured":
                item.update(kind="measured", files=list(b["files"]), machine=" ".join(b["machine"].split()),
                            date=str(b["date"]))
            else:
                item.update(kind="published", source="nccl-tests logs handed to the project, not measured by it: "
                            + ", ".join(b["files"]), files=list(b["files"]))
            item.update(held_out_error=err, held_out="the band is itself the held-out error of the collectives")
        elif "published" in g:
            item.update(kind="published", source=" ".join(str(g["published"]).split()))
        else:
            item.update(kind="assumed", note=" ".join(str(g["assumed"]).split()))
        ref = g.get("held_out_error")
        if ref == "published-band":   # how far NCCL's published link classes were off on real calls
            item.update(held_out_error=_err(published_band), held_out=PUBLISHED_BAND)
        elif ref == "host-band":
            speed = (data.get("host") or {}).get("speed_band") or {}
            item.update(held_out_error=_err(speed.get("time_factor")),
                        held_out="the host's measured spread (host.speed_band.method)")
        Provenance.model_validate(item)
        out.append(item)
    entries = [Provenance.model_validate(p) for p in out]
    gaps = [e for e in entries_of(data) if lookup(entries, e) is None]
    if gaps:
        raise ValueError(f"{name}: no provenance in profiles/inputs.yaml for {', '.join(gaps)}")
    return out


def with_provenance(text: str, section: list[dict]) -> str:
    """A profile file's text with its top-level ``provenance:`` section replaced (it goes last)."""
    from make_profiles import without_section

    out = without_section(text.rstrip("\n"), "provenance")
    body = yaml.safe_dump({"provenance": section}, sort_keys=False, width=120)
    return "\n".join(out).rstrip("\n") + "\n" + body
