"""The verification job's controller (the process that only starts the workers) imports what it
needs and no xgrammar: importing xgrammar imports transformers, seconds on a large environment,
and every worker waits for the controller before it starts."""

from __future__ import annotations

import subprocess
import sys

CONTROLLER = "import properties.run.verify, properties.run.plugin, properties.run.summary_plugin"


def test_the_controller_imports_no_xgrammar() -> None:
    code = f"{CONTROLLER}; import sys; print(sorted(m for m in ('xgrammar', 'transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"the controller imported {out.strip()}"


def test_a_grammar_still_imports_it_where_it_is_built() -> None:
    code = (
        f"{CONTROLLER}; import sys; from reference.grammar import GrammarSpec, start_grammar; "
        "start_grammar(GrammarSpec('regex', 'a+'), 512); print('xgrammar' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"
