"""`lce.LimitsError` (and the `TypeError` of a keyword of the wrong type)
names what is wrong and where: the keyword argument, the file and line, or
the environment variable that was given; never the value (limits may sit
beside secrets in a service's configuration)."""

import pytest

import lce

SECRET = 987654321987  # a value no message may echo


def message(excinfo):
    text = str(excinfo.value)
    assert str(SECRET) not in text and "987654321" not in text, text
    return text


def test_an_unknown_keyword_names_the_keyword_not_a_variable():
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits(nope=1)
    text = message(e)
    assert text == "keyword argument `nope`: unknown option `nope`"
    assert "LCE_LIMIT" not in text


def test_an_unknown_keyword_with_an_unusual_name_is_elided():
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits(**{"a b\n": 1})
    assert message(e) == "keyword argument `<4 byte name>`: unknown option `<4 byte name>`"


def test_a_negative_keyword_says_negative():
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits(tool_result_bytes=-SECRET)
    text = message(e)
    assert text.startswith("keyword argument `tool_result_bytes`: negative")


def test_a_huge_keyword_says_too_large():
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits(events_per_run=SECRET * 10**30)
    assert message(e) == "keyword argument `events_per_run`: too large"


@pytest.mark.parametrize("value, kind", [
    (str(SECRET), "not an integer (a str)"),
    (True, "not an integer (a bool)"),
    (1.5, "not an integer (a float)"),
])
def test_a_keyword_of_another_type_says_not_an_integer(value, kind):
    with pytest.raises(TypeError) as e:
        lce.Limits(tool_result_bytes=value)
    assert message(e) == f"keyword argument `tool_result_bytes`: {kind}"


def test_an_allowlist_keyword_names_its_kind():
    with pytest.raises(TypeError) as e:
        lce.Limits(metadata_allowlist=str(SECRET))
    assert message(e) == "keyword argument `metadata_allowlist`: not a list of str (a str)"
    with pytest.raises(TypeError) as e:
        lce.Limits(metadata_allowlist=["a", SECRET])
    assert message(e) == (
        "keyword argument `metadata_allowlist`: not a list of str (an item is a int)"
    )
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits(metadata_allowlist=[f"{SECRET},x"])
    assert message(e) == "keyword argument `metadata_allowlist`: a name in the list holds a comma"


def test_a_zero_keyword_names_the_keyword():
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits(events_per_run=0)
    assert message(e) == "keyword argument `events_per_run`: `events_per_run` must be at least 1"


def test_limits_out_of_order_name_both_sources_and_no_value():
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits(identifier_bytes=SECRET)
    assert message(e) == (
        "keyword argument `identifier_bytes`: `identifier_bytes` must not exceed "
        "`display_bytes` (from the default)"
    )
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits(warning_details_depth=SECRET)
    assert message(e) == (
        "keyword argument `warning_details_depth`: `warning_details_depth` must not "
        "exceed the parser's opaque depth bound"
    )


def test_a_toml_file_names_the_file_and_line(tmp_path):
    path = tmp_path / "limits.toml"
    path.write_text(f"# limits\nname_bytes = 64\nnope = {SECRET}\n")
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits.load(path, env={})
    assert message(e) == f"file {path}, line 3: unknown option `nope`"
    path.write_text(f'name_bytes = 64\n"tool_result_bytes" = -{SECRET}\n')
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits.load(path, env={})
    assert message(e) == f"file {path}, line 2: `tool_result_bytes` must not be negative"
    path.write_text(f'\n\ntool_result_bytes = "{SECRET}"\n')
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits.load(path, env={})
    assert message(e) == (
        f"file {path}, line 3: `tool_result_bytes` must be a non-negative integer, not string"
    )


def test_a_toml_syntax_error_names_the_file_and_line(tmp_path):
    path = tmp_path / "limits.toml"
    path.write_text(f"name_bytes = 64\ntool_result_bytes = = {SECRET}\n")
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits.load(path, env={})
    assert message(e).startswith(f"file {path}, line 2: syntax error: ")


def test_a_json_file_names_the_file_and_line(tmp_path):
    path = tmp_path / "limits.json"
    path.write_text(f'{{\n  "name_bytes": 64,\n  "events_per_run": {SECRET},\n  "bytes_per_run": 0\n}}')
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits.load(path, env={})
    assert message(e) == f"file {path}, line 4: `bytes_per_run` must be at least 1"


def test_limits_out_of_order_across_sources(tmp_path):
    path = tmp_path / "limits.toml"
    path.write_text(f"\ndisplay_bytes = {SECRET}\n")
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits.load(path, env={"LCE_LIMIT_BYTES_PER_RUN": "1000"})
    assert message(e) == (
        f"file {path}, line 2: `display_bytes` must not exceed `bytes_per_run` "
        "(from environment variable LCE_LIMIT_BYTES_PER_RUN)"
    )


def test_a_missing_file_names_the_file(tmp_path):
    path = tmp_path / "missing.toml"
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits.load(path, env={})
    assert str(path) in message(e)


def test_a_variable_names_itself(monkeypatch):
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits.load(env={"LCE_LIMIT_TOOL_RESULT_BYTES": f"-{SECRET}"})
    assert message(e) == (
        "environment variable LCE_LIMIT_TOOL_RESULT_BYTES: `tool_result_bytes` "
        "must be a non-negative decimal integer"
    )
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits.load(env={"LCE_LIMIT_NOPE": str(SECRET)})
    assert message(e) == "environment variable LCE_LIMIT_NOPE: unknown option `nope`"
    monkeypatch.setenv("LCE_LIMIT_NAME_BYTES", "0")
    with pytest.raises(lce.LimitsError) as e:
        lce.Limits.load()
    assert message(e) == "environment variable LCE_LIMIT_NAME_BYTES: `name_bytes` must be at least 1"
