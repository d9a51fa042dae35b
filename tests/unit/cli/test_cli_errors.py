from typer.testing import CliRunner

from brokerlb.cli.main import build_app


def test_error_text_keeps_brackets_and_exits_2():
    result = CliRunner().invoke(build_app(), ["ring", "find", "persistent://t/n[s]/x"])
    assert result.exit_code == 2
    assert "n[s]" in result.output
