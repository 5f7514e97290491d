"""Attack surface: node names in the command line. A dump names its nodes, so a name is
untrusted text, and it reaches the line by Tab completion. It must stay a name: never
Python that `eval` runs, never quoting or a `> FILE` that the line's split obeys.

The hostile dump holds the shape of issue 27's case: a parameter named
`` `w`+<payload>*0+`w `` beside a real `w`, whose payload creates a file in the working
folder. The payload uses no quotes, so on the old code it ran once the user closed the
backquote that completion left open.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tuidebug.commands import CommandRegistry, History, command_registry
from tuidebug.offline.session import OfflineSession
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef

PAYLOAD_FILE = "pwn"  # what the payload creates: open(chr(112)+chr(119)+chr(110), "w")
HOSTILE = "`w`+len(str(open(chr(112)+chr(119)+chr(110),chr(119))))*0+`w"
# the same name written as a reference: each backquote of the name doubled
HOSTILE_REFERENCE = "```w``+len(str(open(chr(112)+chr(119)+chr(110),chr(119))))*0+``w`"
SHELLISH = "a b'c\"d>e#f"  # a space, both quotes, a redirection and a comment sign
CONTROL = "ctl\x1bname"  # no command line can carry it


def write_hostile_dump(root: Path) -> Path:
    writer = DumpWriter(root, start_timestamp=1000)
    relu = "Default/net/ReLU-op0"
    params = {"w": 1.0, HOSTILE: 7.0, SHELLISH: 4.0, CONTROL: 5.0}
    writer.add_graph(
        0,
        [NodeDef(relu, "ReLU", ["w"], shape=(4,))],
        [ParamDef(name, np.float32, (4,)) for name in params],
    )
    tensors = {(name, "output", 0): np.full(4, v, np.float32) for name, v in params.items()}
    tensors[(relu, "output", 0)] = np.ones(4, np.float32)
    writer.write_iteration(0, 0, tensors)
    writer.finish()
    return root


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CommandRegistry]:
    # the payload writes relative to the working folder: make that the test's own
    monkeypatch.chdir(tmp_path)
    session = OfflineSession(write_hostile_dump(tmp_path / "dump"))
    session.start()
    yield command_registry(session, width=120)
    session.close()


def _complete_and_close(registry: CommandRegistry, line: str) -> str:
    """What a user gets by Tab on `line` for the hostile name, closing the backquote if
    the completion left it open (as the old code did)."""
    completion = registry.complete(line)
    chosen = [c for c in completion.candidates if "open(" in c]
    assert len(chosen) == 1, completion
    done = line[: completion.start] + chosen[0]
    return done if done.count("`") % 2 == 0 else done + "`"


def test_completed_hostile_name_runs_nothing_and_is_an_escaped_reference(
    hostile: CommandRegistry, tmp_path: Path
) -> None:
    line = _complete_and_close(hostile, "eval `")
    out = hostile.run(line)
    assert not (tmp_path / PAYLOAD_FILE).exists(), "a node name ran as Python"
    assert line == f"eval {HOSTILE_REFERENCE}"
    assert out.error is None, out.error
    assert "[7., 7., 7., 7.]" in out.plain()  # the hostile node's own tensor


def test_hostile_reference_in_an_expression_is_its_tensor(
    hostile: CommandRegistry, tmp_path: Path
) -> None:
    for line in (
        f"eval {HOSTILE_REFERENCE}*2",
        f'eval "np.abs({HOSTILE_REFERENCE} - `w`).max()"',
        f"eval '{HOSTILE_REFERENCE}.sum()'",
    ):
        out = hostile.run(line)
        assert out.error is None, (line, out.error)
        assert not (tmp_path / PAYLOAD_FILE).exists(), line
    assert hostile.run(f"eval {HOSTILE_REFERENCE}*2").plain().endswith("[14., 14., 14., 14.]")
    assert hostile.run(f'eval "np.abs({HOSTILE_REFERENCE} - `w`).max()"').plain().endswith("6.0")


def test_completion_in_quotes_writes_the_reference_for_those_quotes(
    hostile: CommandRegistry, tmp_path: Path
) -> None:
    for head, tail in (('eval "np.abs(`', ').sum()"'), ("eval 'np.abs(`", ").sum()'")):
        line = _complete_and_close(hostile, head)
        out = hostile.run(line + tail)
        assert out.error is None, (line, out.error)
        assert out.plain().endswith("= 28.0"), out.plain()
    assert not (tmp_path / PAYLOAD_FILE).exists()


def test_history_keeps_the_reference_not_a_payload(
    hostile: CommandRegistry, tmp_path: Path
) -> None:
    history = History()
    history.add(_complete_and_close(hostile, "eval `"))
    again = history.previous("")
    assert again is not None
    hostile.run(again)  # ↑ and Enter
    assert not (tmp_path / PAYLOAD_FILE).exists()
    assert HOSTILE_REFERENCE in again


def test_eval_completes_names_only_inside_backquotes(hostile: CommandRegistry) -> None:
    completion = hostile.complete("eval w")
    assert completion.candidates == ()  # a raw name would be Python source
    assert "inside backquotes" in completion.note
    assert hostile.complete("eval `w").candidates == ("`w`",)
    assert hostile.complete("eval `Def").candidates == ("`Default/",)  # a scope stays open


def test_a_name_with_quotes_spaces_and_redirection_stays_one_name(
    hostile: CommandRegistry, tmp_path: Path
) -> None:
    completion = hostile.complete("pt a")
    assert len(completion.candidates) == 1
    out = hostile.run("pt " + completion.candidates[0])
    assert out.error is None, out.error
    assert "[4., 4., 4., 4.]" in out.plain()
    assert not (tmp_path / "e#f").exists() and not (tmp_path / "e").exists()
    line = _complete_and_close_plain(hostile, 'eval "np.abs(`a')
    out = hostile.run(line + ').max()"')
    assert out.error is None and out.plain().endswith("= 4.0"), out.plain()


def _complete_and_close_plain(registry: CommandRegistry, line: str) -> str:
    completion = registry.complete(line)
    assert len(completion.candidates) == 1, completion
    return line[: completion.start] + completion.candidates[0]


def test_a_name_no_line_can_carry_is_refused_with_a_sentence(hostile: CommandRegistry) -> None:
    completion = hostile.complete("eval `ctl")
    assert completion.candidates == ()
    assert "cannot be named in a command line" in completion.note
    assert "\n" not in completion.note and "\x1b" not in completion.note
    out = hostile.run(f"eval `{CONTROL}`")
    assert out.error is not None and "cannot be named in a command line" in out.error
    assert "\x1b" not in out.error


@pytest.mark.parametrize(
    ("line", "sentence"),
    [
        ("eval ``", "empty reference"),
        ("eval `w``", "a backquote inside a name is written twice"),
        ("eval ```w", "a backquote inside a name is written twice"),
    ],
)
def test_reference_mistakes_are_one_sentence(
    hostile: CommandRegistry, line: str, sentence: str
) -> None:
    out = hostile.run(line)
    assert out.error is not None and sentence in out.error, out.error


def test_the_users_own_expression_still_runs(hostile: CommandRegistry) -> None:
    """The user's text is theirs, as at a Python prompt: builtins, numpy, math; and a name
    they use cannot collide with the variable a reference becomes."""
    out = hostile.run('eval "len(range(3)) + math.floor(np.float32(1.5)) + `w`.sum()"')
    assert out.error is None and out.plain().endswith("= 8.0"), out.plain()
    # the old placeholder `_t0`: the user's text reached the reference's variable
    out = hostile.run('eval "`w`.sum() + _t0.sum()"')
    assert out.error is not None and "NameError: name '_t0'" in out.error, out.plain()


def test_a_references_slice_is_applied(hostile: CommandRegistry) -> None:
    """`NAME[SLICE]` in a reference was parsed and then ignored: the whole tensor."""
    out = hostile.run("eval `w[0:2]`.sum()")
    assert out.error is None and out.plain().endswith("= 2.0"), out.plain()
