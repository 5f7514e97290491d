"""The subcommand table: `tuidebug NAME …` imports the module of NAME alone (issue 28).

`tuidebug offline` is a TUI start; importing the seven other subcommands' modules (the
check's machinery among them) only delayed its first frame. The table names each module
by its NAME, so a test keeps the two in step.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_cold_imports import loaded_after, offenders
from tuidebug import cli


def test_each_name_of_the_table_is_its_modules_name() -> None:
    assert {name: cli.subcommand(name).NAME for name in cli.SUBCOMMANDS} == {
        name: name for name in cli.SUBCOMMANDS
    }


def test_the_whole_parser_lists_the_table_in_its_order() -> None:
    help_text = cli.build_parser().format_help()
    positions = [help_text.index(f"    {name} ") for name in cli.SUBCOMMANDS]
    assert positions == sorted(positions)


@pytest.mark.parametrize(
    "words",
    [
        ["offline", "dump", "--watch", "TO", "--rank", "1"],
        ["check", "dump", "--watch", "TL:max_gt=1", "--json", "--iteration", "2-3"],
        ["exec", "dump", "lt", "--iteration", "3"],
    ],
)
def test_a_parser_of_one_subcommand_reads_its_words_as_the_whole_parser(
    words: list[str],
) -> None:
    whole = cli.build_parser().parse_known_args(words)
    alone = cli.build_parser(only=words[0]).parse_known_args(words)
    assert vars(alone[0]) == vars(whole[0])
    assert alone[1] == whole[1]


def test_the_offline_command_imports_no_other_subcommand(tmp_path: Path) -> None:
    loaded = loaded_after(
        "from tuidebug.cli import main\n"
        f"assert main(['offline', {str(tmp_path / 'missing')!r}]) == 2"
    )
    assert "tuidebug.cli.offline" in loaded
    others = [f"tuidebug.cli.{module}" for module in cli.SUBCOMMANDS.values()]
    assert offenders(loaded, tuple(m for m in others if m != "tuidebug.cli.offline")) == []
