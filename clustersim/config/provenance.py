"""How each entry of a profile or topology file is known: one small vocabulary, five evidence classes.

Every shipped profile and topology carries a ``provenance:`` list; each item names the fields it covers
(dotted paths such as ``compute.gemm_table``, ``links.network`` or ``node.links``) and one class:

``measured``
    measured by this project: ``files``, ``machine``, ``date``; ``held_out_error`` where the figure built on
    it was checked on runs it was not made from.
``fitted``
    a model fitted to measurements (``files``, ``machine``, ``date``) with its ``held_out_error``.
``transferred``
    another GPU's measurements moved by a rule: ``from_profile`` / ``from_gpu``, ``rule`` and the rule's
    ``leave_one_gpu_out_error``.
``published``
    a vendor's or library's constant: ``source``; ``held_out_error`` where this project measured how far
    such constants disagree with real calls.
``assumed``
    a default nobody measured (``note`` says why it is what it is).

An error is a relative half-width (fraction): the 95% quantile of ``|log(predicted / measured)|`` on
held-out data, the quantity every band of the project is made of. :func:`entry_error` gives the one a
band takes, :data:`ASSUMED_ERROR` for an entry that states none.

>>> p = Provenance(fields=["links.network"], kind="published", source="NCCL tuning.cc")
>>> lookup([p], "links.network").kind, lookup([p], "links.nvlink") is None
('published', True)
"""

from __future__ import annotations

from typing import Iterable, Literal

from pydantic import Field, model_validator

from clustersim.config.base import StrictModel

#: the evidence classes, most to least direct
EVIDENCE_CLASSES = ("measured", "fitted", "transferred", "published", "assumed")
EvidenceClass = Literal["measured", "fitted", "transferred", "published", "assumed"]

#: Relative error of a figure resting on an assumption nobody measured: +-50%. Wide on purpose (a default
#: efficiency, a guessed latency): the widest held-out error of a measured or transferred entry shipped
#: today is 0.45 (the transfer rule's conservative value, profiles/inputs.yaml transfer_rule), an assumption
#: is not better known than that.
ASSUMED_ERROR = 0.5

_NEEDS = {"measured": ("files", "machine", "date"), "fitted": ("files", "held_out_error"),
          "transferred": ("from_profile", "rule", "leave_one_gpu_out_error"), "published": ("source",),
          "assumed": ("note",)}


class Provenance(StrictModel):
    """How the fields it names are known (one of :data:`EVIDENCE_CLASSES`, with that class's facts)."""

    fields: list[str] = Field(min_length=1, description="Dotted paths of the entries this item covers "
                              "(compute.gemm_table, links.network, node.links, host); a path covers its children.")
    kind: EvidenceClass = Field(description="Evidence class: measured, fitted, transferred, published or assumed.")
    files: list[str] = Field(default_factory=list, description="Measurement files (repository paths), "
                             "measured and fitted entries.")
    machine: str | None = Field(None, description="The machine measured (measured and fitted entries).")
    date: str | None = Field(None, description="When it was measured (ISO date, or a range).")
    held_out_error: float | None = Field(None, ge=0.0, description="Relative error (fraction) on held-out "
                                         "data: 95% quantile of |log(predicted/measured)|.")
    held_out: str | None = Field(None, description="Which held-out data the error was taken on.")
    from_profile: str | None = Field(None, description="Transferred: the measured profile it comes from.")
    from_gpu: str | None = Field(None, description="Transferred: the measured GPU it comes from.")
    rule: str | None = Field(None, description="Transferred: the rule that moved it (module or paragraph).")
    leave_one_gpu_out_error: float | None = Field(None, ge=0.0, description="Transferred: the rule's "
                                                  "leave-one-GPU-out relative error (fraction).")
    source: str | None = Field(None, description="Published: the document, page or code line it is read from.")
    note: str | None = Field(None, description="Free text: why an assumption is what it is, caveats.")

    @model_validator(mode="after")
    def _facts(self) -> "Provenance":
        missing = [k for k in _NEEDS[self.kind] if getattr(self, k) in (None, [], "")]
        if missing:
            raise ValueError(f"a {self.kind} entry needs {', '.join(missing)}")
        return self


def entry_error(p: Provenance | None) -> float:
    """The relative error a band takes for a figure resting on ``p``: the transfer rule's leave-one-GPU-out
    error, else the held-out error, else :data:`ASSUMED_ERROR` (an entry without a held-out check, or none).

    >>> entry_error(Provenance(fields=["x"], kind="assumed", note="default")), entry_error(None)
    (0.5, 0.5)
    """
    if p is None:
        return ASSUMED_ERROR
    if p.kind == "transferred":
        # the shipped value is a documented conservative 0.45 (profiles/inputs.yaml transfer_rule) until the lead's
        # leave-one-GPU-out table of the transfer rule (issue 32) lands; the recipe then writes the measured one
        return float(p.leave_one_gpu_out_error)
    return float(p.held_out_error) if p.held_out_error is not None else ASSUMED_ERROR


def lookup(entries: Iterable[Provenance], path: str) -> Provenance | None:
    """The entry covering ``path``: the one naming the longest prefix of it (``compute`` covers
    ``compute.gemm_table``), None where none does."""
    best, best_len = None, -1
    for p in entries:
        for f in p.fields:
            if (path == f or path.startswith(f + ".")) and len(f) > best_len:
                best, best_len = p, len(f)
    return best


#: top-level keys that describe a file rather than hold a figure (no provenance needed)
DESCRIPTIVE = {"name", "description", "notes", "source", "sources", "inferred", "provenance", "extends", "gpu",
               "default_profile"}
#: sections whose every key is an entry of its own (a path ``section.key``)
PER_KEY = {"compute", "host", "links", "node", "cluster"}


def entries_of(data: dict) -> list[str]:
    """The dotted paths of a profile's or topology's entries that need provenance: every top-level key
    holding a figure, and for the sections of :data:`PER_KEY` each of their keys.

    >>> entries_of({"name": "x", "nvls": True, "links": {"nvlink": {}, "pcie": {}}})
    ['nvls', 'links.nvlink', 'links.pcie']
    """
    out = []
    for k, v in data.items():
        if k in DESCRIPTIVE:
            continue
        if k in PER_KEY and isinstance(v, dict):
            out += [f"{k}.{sub}" for sub in v]
        else:
            out.append(k)
    return out


def provenance_gaps(data: dict) -> list[str]:
    """The entries of ``data`` (a parsed profile or topology file) no ``provenance`` item covers.

    >>> provenance_gaps({"nvls": True, "links": {"nvlink": {}},
    ...                  "provenance": [{"fields": ["links"], "kind": "published", "source": "NCCL"}]})
    ['nvls']
    """
    entries = [Provenance.model_validate(p) for p in data.get("provenance") or []]
    return [e for e in entries_of(data) if lookup(entries, e) is None]
