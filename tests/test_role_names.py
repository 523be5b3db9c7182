"""One list of column roles (dataaudit.rule.ROLE_NAMES): every place that names roles takes it."""

from __future__ import annotations

import dataclasses

import pytest

from dataaudit import audit
from dataaudit.cli import build_parser
from dataaudit.config import load_config
from dataaudit.corpus import Roles
from dataaudit.errors import ConfigError
from dataaudit.rule import ROLE_NAMES, TEXT_ROLES
from dataaudit.rules.format.role_values import RoleValues


def test_roles_has_a_field_per_role_and_text_roles_are_roles():
    fields = [f.name for f in dataclasses.fields(Roles) if f.name != "detected"]
    assert fields == list(ROLE_NAMES)
    assert set(TEXT_ROLES) < set(ROLE_NAMES) and "messages" not in TEXT_ROLES


def test_every_role_is_a_cli_flag_a_config_key_and_an_audit_argument():
    for role in ROLE_NAMES:
        args = build_parser().parse_args(["audit", "data.jsonl", f"--{role}", "col"])
        assert getattr(args, role) == "col"
    cfg = load_config({"columns": dict.fromkeys(ROLE_NAMES, "c"), "require_roles": ROLE_NAMES})
    assert list(cfg.columns) == list(ROLE_NAMES) and cfg.require_roles == list(ROLE_NAMES)
    RoleValues(roles=list(ROLE_NAMES)).check_options()
    with pytest.raises(ConfigError, match=f"Column roles: {', '.join(ROLE_NAMES)}"):
        audit([{"text": "a"}], lable="x")
