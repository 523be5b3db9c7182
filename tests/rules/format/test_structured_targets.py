"""FMT003: examples say what is wrong (parse position, schema path, unknown tool); schema and
tool files from the config fail loudly before the scan."""

from __future__ import annotations

import json

import pytest

from dataaudit import audit
from dataaudit.errors import ConfigError

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def _call(name: str, arguments: str) -> dict:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }


def _examples(report, code: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for res in report.to_dict()["results"]:
        if res["code"] == code:
            for f in res["findings"]:
                out[f["data"]["category"]] = [e["text"] for e in f["examples"]]
    return out


def test_examples_name_the_turn_the_position_and_the_path():
    rows = [
        {"tools": [WEATHER], "messages": [{"role": "user", "content": "Oslo?"}, _call("get_wether", '{"city": "Oslo"}')]},
        {"tools": [WEATHER], "messages": [{"role": "user", "content": "Oslo?"}, _call("get_weather", '{"city": 5}')]},
        {"tools": [WEATHER], "messages": [{"role": "user", "content": "Oslo?"}, _call("get_weather", '{"city": ')]},
        {"tools": [WEATHER], "messages": [{"role": "user", "content": "Answer in JSON."}, {"role": "assistant", "content": '{"a": 1,}'}]},
    ]  # fmt: skip
    ex = _examples(audit(rows, select=["FMT003"]), "FMT003")
    assert ex["unknown_tool"][0].startswith("[turn 2: 'get_wether' is not declared (get_weather)]")
    assert ex["invalid_arguments"][0].startswith(
        "[turn 2: get_weather: at $.city: 5 is not of type 'string']"
    )
    assert "at line 1 column 10 (char 9)" in ex["arguments_parse_error"][0]
    assert ex["json_parse_error"][0].startswith(
        "[turn 2: Expecting property name enclosed in double quotes at line 1 column 9 (char 8)]"
    )


def test_schema_and_tools_from_files(tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "object", "required": ["name"]}))
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([WEATHER]))
    rows = [
        {"messages": [{"role": "user", "content": "Reply in JSON."}, {"role": "assistant", "content": '{"x": 1}'}]},
        {"messages": [{"role": "user", "content": "Oslo?"}, _call("get_weather", "{}")]},
    ]  # fmt: skip
    report = audit(
        rows, select=["FMT003"], rules={"FMT003": {"schema": str(schema), "tools": str(tools)}}
    )
    ex = _examples(report, "FMT003")
    assert ex["schema_violation"][0].startswith("[turn 2: at $: 'name' is a required property]")
    assert ex["missing_argument"][0].startswith("[turn 2: get_weather: at $: 'city' is a required")


@pytest.mark.parametrize(
    ("content", "option", "says"),
    [
        ('{"type": "objekt"}', "schema", "not a valid JSON Schema at $.type"),
        ('{"type": ', "schema", "is not valid JSON (Expecting value at line 1 column 10)"),
        ('[{"type": "function", "function": {"parameters": {}}}]', "tools", "has no function name"),
        ('{"f": {"type": 3}}', "tools", "the parameters of 'f' are not a valid JSON Schema"),
    ],
)
def test_a_bad_schema_or_tools_file_is_a_config_error_naming_the_file(
    tmp_path, content, option, says
):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ConfigError) as err:
        audit(
            [{"response": "{}"}],
            select=["FMT003"],
            rules={"FMT003": {option: str(path), "json_fields": ["response"]}},
        )
    assert says in str(err.value) and str(path) in str(err.value)


def test_a_missing_file_is_a_config_error():
    with pytest.raises(ConfigError, match="cannot read '/nonexistent/s.json'"):
        audit(
            [{"response": "{}"}],
            select=["FMT003"],
            rules={"FMT003": {"schema": "/nonexistent/s.json"}},
        )


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (WEATHER["function"]["parameters"], {"city": "Oslo"}),
        (WEATHER["function"]["parameters"], {"city": 5}),
        (WEATHER["function"]["parameters"], {}),
        (WEATHER["function"]["parameters"], ["Oslo"]),
        ({"type": "integer"}, 3.0),
        ({"type": "integer"}, True),
        ({"type": "number", "minimum": 1}, 0),
        ({"enum": ["a", "b"]}, "c"),
        ({"type": "object", "additionalProperties": False, "properties": {"a": {}}}, {"b": 1}),
        ({"type": "array", "items": {"type": "string"}}, ["a", 1]),
        ({"type": "string", "pattern": "^a"}, "b"),  # not in the subset: jsonschema decides
    ],
)
def test_the_fast_schema_check_agrees_with_jsonschema(schema, value):
    import jsonschema

    from dataaudit.resources.schemas import quick_checker, quick_valid

    valid = jsonschema.Draft202012Validator(schema).is_valid(value)
    for fast in (quick_valid(schema, value), quick_checker(schema)(value)):
        assert fast in (valid, None)


def test_chats_stored_as_json_text_give_the_same_findings_as_structs():
    rows = [
        {"tools": [WEATHER], "messages": [{"role": "user", "content": "Oslo?"}, _call("get_wether", '{"city": "Oslo"}')]},
        {"tools": [WEATHER], "messages": [{"role": "user", "content": "Hi"}, {"role": "user", "content": "Hello?"}]},
        {"tools": [WEATHER], "messages": [{"role": "user", "content": "Reply in JSON."}, {"role": "assistant", "content": "{"}]},
    ]  # fmt: skip
    as_text = [
        {"tools": json.dumps(r["tools"]), "messages": json.dumps(r["messages"])} for r in rows
    ]

    def flags(data):
        report = audit(data, select=["FMT002", "FMT003"], messages="messages")
        return sorted(report.flags().select("code", "row", "detail").rows())

    assert flags(rows) == flags(as_text) and len(flags(rows)) == 4
