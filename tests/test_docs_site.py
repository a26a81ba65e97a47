"""The Python API reference renders: the built site has no Sphinx role left as text and no
unresolved cross-reference, and every name of ``rp1.__all__`` is documented in the docstring
style the site renders (Google: Args, Returns, Raises, Attributes) with its defaults as values.

These tests need the ``docs`` extra (mkdocs, mkdocstrings, griffe), which CI installs before it
runs the tests (``.ci/run``); without it they skip, saying so.
"""

from __future__ import annotations

import ast
import dataclasses
import html
import inspect
import os
import re
import subprocess
import sys
import tomllib
import typing
from pathlib import Path

import pytest

import rp1
from helpers import ROOT

API_PAGES = ("python-api",)
"""The site's pages (directories of ``index.html``) that render docstrings (``:::`` blocks)."""
ROLE = re.compile(r":(?:class|func|mod|data|meth|attr|exc|obj|ref):`?~?[\w.]+`?")
"""A Sphinx role as it is left in the page's text: ``:class:`~rp1.Config``` renders as
``:class:~rp1.Config``."""
UNRESOLVED = re.compile(r"\[[^\[\]\n]*\]\[[\w.:-]*\]")
"""What autorefs leaves of a cross-reference it cannot resolve: ``[title][identifier]``."""


def page_text(page_html: str) -> str:
    """The text a reader sees of ``page_html``: code blocks and tags removed, entities decoded."""
    without_code = re.sub(r"<pre\b.*?</pre>", " ", page_html, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", without_code))


def problems(page_html: str) -> list[str]:
    """The Sphinx roles and unresolved cross-references in a page's text."""
    text = page_text(page_html)
    return [f"role {m}" for m in ROLE.findall(text)] + [
        f"unresolved {m}" for m in UNRESOLVED.findall(text)
    ]


def test_problems_finds_roles_and_unresolved_references():
    page = (
        "<p>Raises :class:<code>~rp1.core.errors.ConfigError</code> and :func:`resolve`; see "
        "[<code>Config</code>][rp1.nowhere] and [Method][]</p><pre>x = a[0][1]</pre>"
        '<p><a href="#rp1.Config">Config</a>, shape [B, obs_dim], obs[None]</p>'
    )
    assert problems(page) == [
        "role :class:~rp1.core.errors.ConfigError",
        "role :func:`resolve`",
        "unresolved [Config][rp1.nowhere]",
        "unresolved [Method][]",
    ]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documentation site, built as CI builds it (``mkdocs build --strict``)."""
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        pytest.importorskip(
            module, reason="the docs extra is not installed: pip install -e .[docs]"
        )
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)]
    result = subprocess.run(build, cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    # an unresolved cross-reference is a warning, so --strict fails on it; say which it was
    assert "Could not find cross-reference target" not in result.stderr, result.stderr[-3000:]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("page", API_PAGES)
def test_api_page_has_no_role_and_no_unresolved_reference(site, page):
    page_html = (site / page / "index.html").read_text(encoding="utf-8")
    assert 'class="doc doc-heading"' in page_html  # mkdocstrings rendered it
    assert problems(page_html) == []


@pytest.mark.slow
def test_api_page_renders_every_public_name(site):
    ids = set(re.findall(r'id="([\w.]+)"', (site / "python-api" / "index.html").read_text()))
    for name in sorted(set(rp1.__all__) - {"__version__"}):
        module, qualname = _canonical(name)
        # rendered under its module or a package above it that exports it (rp1.config.Method)
        parts = module.split(".")
        paths = {f"{'.'.join(parts[:k])}.{qualname}" for k in range(1, len(parts) + 1)}
        assert paths & ids, f"rp1.{name} is not rendered in docs/python-api.md"


def test_api_pages_are_those_that_render_docstrings():
    rendering = {p.stem for p in (ROOT / "docs").glob("*.md") if "\n::: " in p.read_text()}
    assert rendering == set(API_PAGES)


def _canonical(name: str) -> tuple[str, str]:
    obj = getattr(rp1, name)
    return obj.__module__, obj.__qualname__


@pytest.fixture(scope="module")
def package():
    """rp1 as griffe, mkdocstrings' reader, sees it."""
    griffe = pytest.importorskip("griffe", reason="the docs extra is not installed")
    return griffe.load("rp1", search_paths=[str(ROOT / "src")], docstring_parser="google")


def _sections(package, name: str):
    module, qualname = _canonical(name)
    obj = package.modules_collection[f"{module}.{qualname}"]
    assert obj.docstring is not None, f"rp1.{name} has no docstring"
    return obj, {section.kind.value: section for section in obj.docstring.parse("google")}


@pytest.mark.parametrize(
    "name", sorted(n for n in rp1.__all__ if inspect.isfunction(getattr(rp1, n, None)))
)
def test_public_function_documents_its_parameters_returns_and_defaults(package, name):
    obj, sections = _sections(package, name)
    documented = [p.name for p in sections["parameters"].value] if "parameters" in sections else []
    assert documented == [p.name for p in obj.parameters], f"rp1.{name}: Args"
    if str(obj.returns) != "None":
        assert "returns" in sections, f"rp1.{name}: Returns"
        # one value, one row of the rendered table (a line of its own at the section's indent
        # would be another)
        assert len(sections["returns"].value) == 1, f"rp1.{name}: Returns renders as several"
    for parameter in obj.parameters:
        if parameter.default is not None:  # a literal, not a constant's name
            ast.literal_eval(str(parameter.default))


@pytest.mark.parametrize("name", ["Config", "Method", "TaskSpec"])
def test_public_dataclass_documents_its_fields(package, name):
    _, sections = _sections(package, name)
    documented = {a.name for a in sections["attributes"].value}
    cls = getattr(rp1, name)
    hints = typing.get_type_hints(cls)
    # a config's sections (model, policy, …) are documented by the Configuration page
    values = {
        f.name for f in dataclasses.fields(cls) if not dataclasses.is_dataclass(hints[f.name])
    }
    assert documented == values


def test_the_docs_extra_has_a_formatter_for_signatures():
    """mkdocstrings-python lays out a long signature (``separate_signature``, mkdocs.yml) with
    Black or Ruff, whichever is installed; without either it is one unbroken line."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    docs = [
        re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0] for r in project["optional-dependencies"]["docs"]
    ]
    assert {"black", "ruff"} & set(docs), docs
    assert "separate_signature: true" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_defaults_shown_as_values_are_the_constants():
    from rp1.config.methods import DEFAULT_METHOD
    from rp1.rundir.files import BEST

    for function, parameter, constant in [
        (rp1.load_policy, "which", BEST),
        (rp1.evaluate_run, "which", BEST),
        (rp1.env_config, "method", DEFAULT_METHOD),
    ]:
        assert inspect.signature(function).parameters[parameter].default == constant
