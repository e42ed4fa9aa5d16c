"""The generator's digest: the same generator gives the same digest, a changed source, argument,
attribute or adapter setting another; it is computed without running the module."""

from __future__ import annotations

import textwrap

import pytest

from privgate.audit.identity import adapter_digest, callable_digest, is_digest, spec_digest
from privgate.errors import ParameterError

SOURCE = textwrap.dedent("""
    def gen(training, n_rows, seed):
        return training.head(n_rows)

    def harmless(training, n_rows, seed):
        return training.head(0)

    class Made:
        def __init__(self, scale=1.0):
            self.scale = scale

        def __call__(self, training, n_rows, seed):
            return training.head(n_rows)
""")


@pytest.fixture
def module(tmp_path, monkeypatch):
    path = tmp_path / "ident_gens.py"
    path.write_text(SOURCE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return path


def test_same_generator_same_digest_and_any_change_another(module):
    d = spec_digest("ident_gens:gen")
    assert is_digest(d) and d == spec_digest("ident_gens:gen")
    assert spec_digest("ident_gens:harmless") != d  # another function of the same module
    assert spec_digest("ident_gens:Made", '{"scale": 2}') == spec_digest("ident_gens:Made", '{ "scale" : 2 }')
    assert spec_digest("ident_gens:Made", {"scale": 2}) == spec_digest("ident_gens:Made", '{"scale": 2}')
    assert spec_digest("ident_gens:Made", '{"scale": 2}') != spec_digest("ident_gens:Made", '{"scale": 3}')
    assert spec_digest("ident_gens:Made", "{}") != spec_digest("ident_gens:Made")
    import ident_gens

    # the Python API's digest of the function is the digest of its module:name
    assert callable_digest(ident_gens.gen) == d
    module.write_text(SOURCE + "\n# one more line\n", encoding="utf-8")
    assert spec_digest("ident_gens:gen") != d  # changed source


def test_the_module_is_not_run_and_bad_specs_are_named(tmp_path, monkeypatch):
    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert is_digest(spec_digest("exits_on_import:gen"))
    with pytest.raises(ParameterError, match="cannot import module 'no_such_module_x'"):
        spec_digest("no_such_module_x:gen")
    with pytest.raises(ParameterError, match="module:name"):
        spec_digest("no_colon")
    with pytest.raises(ParameterError, match="--generator-args must be a JSON object"):
        spec_digest("exits_on_import:gen", "[1]")


def test_an_adapter_digest_covers_its_settings_and_library():
    from privgate.audit.generators.copulas import CopulaGenerator

    a = adapter_digest(CopulaGenerator(distribution="beta"))
    assert a == adapter_digest(CopulaGenerator(distribution="beta"))
    assert a != adapter_digest(CopulaGenerator(distribution="gaussian_kde"))
    assert a != adapter_digest(CopulaGenerator(distribution="beta", domain={"x": (0.0, 1.0)}))
    assert callable_digest(CopulaGenerator(distribution="beta")) == a
    assert callable_digest(lambda t, n, s: t) is None  # no source to name: no digest
