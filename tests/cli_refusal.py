"""One check for "refused as bad input": exit 2, one `error: ` line, no traceback."""

from __future__ import annotations

from typing import Any

from metasim.cli.main import main


def refused(capsys: Any, argv: list[str]) -> str:
    """Run `metasim argv` in-process; assert it was refused with exit 2 and one line on
    stderr starting `error: `, no traceback; return that line."""
    try:
        code = main(argv)
    except SystemExit as exc:  # refused while parsing the arguments
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err
