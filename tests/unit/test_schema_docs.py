"""Every field of the profile schema is documented (the description travels into `clustersim schema profile`)."""

from __future__ import annotations

from clustersim.config.profile import Profile


def _undocumented(schema: dict) -> list[str]:
    out = []
    for model, spec in {"Profile": schema, **schema.get("$defs", {})}.items():
        for field, prop in spec.get("properties", {}).items():
            if not prop.get("description"):
                out.append(f"{model}.{field}")
    return out


def test_every_profile_field_has_a_description():
    schema = Profile.model_json_schema()
    assert len(schema["$defs"]) >= 10  # the nested models are reached, not only the top level
    assert _undocumented(schema) == []
