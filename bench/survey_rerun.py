"""Re-probe one host style's changed scenario(s) over a saved survey, in place.

    python bench/survey_rerun.py --survey docs/survey-table.json --list LIST \
        --style python -s sigterm --out docs/survey-table

For when one scenario of one style changed (the python style's `sigterm` now signals the
process group, as the Python SDK does) and a whole survey (hours) is not needed: every
probed row of the saved JSON gets that scenario probed again in that style
(`mcp_tether.survey.rerun`), its failures and the style's level passes recomputed, and
the three renderings written again (a scenario that cannot run again keeps its first
verdict). A failure is run again twice more, as in a survey (`survey.repeat`): only one
that repeats stays a failure, one that passes once is `flaky`, and every run keeps the
load average taken before it. The LIST must be the one the survey was made from
(rows are matched by label). Prints the load average at the start and the run time.
Runs in a pid namespace of its own (bench/_pidns.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _pidns  # noqa: E402  # bench's sibling module

from mcp_tether.survey import SurveyResult, parse_list, rerun  # noqa: E402
from mcp_tether.survey.render import to_html, to_json, to_markdown  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--survey", required=True, type=Path)
    ap.add_argument("--list", required=True)
    ap.add_argument("--style", default="python", choices=("node", "python", "guarded"))
    ap.add_argument("-s", "--scenario", action="append", required=True, dest="scenarios")
    ap.add_argument("--only", action="append", default=[], metavar="TEXT",
                    help="only rows whose label contains TEXT (repeatable)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", metavar="BASE", required=True)
    a = ap.parse_args()
    _pidns.enter()
    result = SurveyResult.from_dict(json.loads(a.survey.read_text()))
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    print(f"load average at the start: {load:.2f}", flush=True)
    rerun(result, parse_list(a.list), a.style, tuple(a.scenarios), jobs=a.jobs,
          only=tuple(a.only),
          on_row=lambda r: print(f"{r.label}: {a.style} " + ", ".join(
              f"{s}={r.verdicts[a.style].get(s)}" for s in a.scenarios), flush=True))
    for ext, text in (("md", to_markdown(result)), ("json", to_json(result)),
                      ("html", to_html(result))):
        Path(f"{a.out}.{ext}").write_text(text)
    print(f"re-probed in {time.monotonic() - t0:.0f} s, load average at the end "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
