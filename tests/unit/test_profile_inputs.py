"""profiles/inputs.yaml names every input of every shipped profile, and every file it names exists.

``python profiles/make_profiles.py --check`` compares the file with what the recipe reads while it runs (a minute);
this test checks the same without running it: the file's own facts, the files the profiles name as their sources,
and every input path the recipe's modules hold.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "profiles"))
make_profiles = importlib.import_module("make_profiles")  # the recipe (profiles/make_profiles.py)
recipe_base = importlib.import_module("recipe_base")
fsdp_hook = importlib.import_module("fsdp_hook")

INPUTS = yaml.safe_load((ROOT / "profiles" / "inputs.yaml").read_text())
SHIPPED = sorted(p.stem for p in (ROOT / "profiles").glob("*.yaml") if p.name != "inputs.yaml")


def listed(name: str) -> set[str]:
    """Every file profiles/inputs.yaml names for profile ``name`` (its groups' files, its band's files)."""
    out: set[str] = set()
    for g in INPUTS["profiles"][name]:
        out |= set(g.get("files") or [])
        if "band" in g:
            band = INPUTS["bands"][g["band"]]
            out |= set(INPUTS["bands"][band["same_as"]]["files"] if "same_as" in band else band["files"])
    return out


def test_inputs_file_is_complete_and_every_listed_file_exists():
    assert make_profiles.inputs_problems() == []


@pytest.mark.parametrize("name", SHIPPED)
def test_every_source_file_of_a_profile_is_listed_for_it(name):
    """The files a shipped profile names as its sources (``source.files``, its link model's provenance) are all in
    profiles/inputs.yaml under that profile."""
    data = yaml.safe_load((ROOT / "profiles" / f"{name}.yaml").read_text())
    named = set((data.get("source") or {}).get("files") or [])
    named |= set(((data.get("link_model") or {}).get("provenance") or {}).get("files") or [])
    assert named <= listed(name), f"{name}: not in profiles/inputs.yaml: {sorted(named - listed(name))}"


def _path_constants() -> set[str]:
    out: set[str] = set()
    for mod in (recipe_base, fsdp_hook, make_profiles):
        for value in vars(mod).values():
            items = value if isinstance(value, (list, tuple)) else \
                [x for v in value.values() for x in (v if isinstance(v, (list, tuple)) else [v])] \
                if isinstance(value, dict) else [value]
            out |= {x for x in items if isinstance(x, str) and x.startswith(("profiles/measurements/", "validation/"))}
    return out


def test_every_input_path_of_the_recipe_is_listed():
    """Every repository path the recipe's modules hold as an input is named in profiles/inputs.yaml."""
    every = set().union(*(listed(n) for n in INPUTS["profiles"]))
    consts = _path_constants()
    assert len(consts) >= 30
    assert consts <= every, f"read by the recipe, not in profiles/inputs.yaml: {sorted(consts - every)}"
