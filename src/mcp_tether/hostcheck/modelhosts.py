"""How a host is pointed at the stand-in model (`modelapi.py`) for the tool-calling
scenarios: which API it speaks, the variables and config that make it ask the stand-in
(and nothing else), and what lets it call the recorder's tool without asking.

    w = wiring("claude-code", api=None, env_vars=[])
    w.env_for("http://127.0.0.1:PORT")     # ANTHROPIC_BASE_URL=..., a dummy key, ...

Built in (measured on Claude Code 2.1.332 and Codex 0.171.0):
- `claude-code`: the Anthropic API at `ANTHROPIC_BASE_URL`, a dummy `ANTHROPIC_API_KEY`
  (approved in the throwaway `~/.claude.json` as its own dialog would), telemetry,
  the auto-updater, error reports and other non-essential traffic off; the recorder's
  tool allowed in the project's `.claude/settings.local.json` (`permissions.allow`),
  since the session would otherwise ask before each call.
- `codex`: a model provider in `~/.codex/config.toml` whose `base_url` is the stand-in
  (`wire_api = "responses"`), the stand-in's model name (an unknown model: Codex then
  offers MCP tools as namespaces, not behind its tool search), update checks and
  analytics off, and `default_tools_approval_mode = "approve"` on the recorder's entry
  (else each call waits for an approval nobody gives).
Any other host: `--model-api anthropic|openai`, and `--model-env VAR` (set to the
stand-in's base URL) or `{model_url}` in its command line.

Guarantees:
- Every URL given to a host is the stand-in's on 127.0.0.1; a key the user set for the
  host is replaced by a dummy one, never passed on.
- Data and file writes in the throwaway HOME and project only; nothing starts here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_tether.errors import UsageError
from mcp_tether.hostcheck.config import ENTRY_NAME, merge_json

__all__ = ["ModelWiring", "APIS", "MODEL_URL", "PROMPT", "wiring", "BUILT_IN"]

APIS = ("anthropic", "openai")
MODEL_URL = "{model_url}"  # in the host's command line: the stand-in's base URL
PROMPT = "{prompt}"  # in the host's command line: the prompt that starts the script
PROVIDER = "mcp-tether-stand-in"


@dataclass(frozen=True)
class ModelWiring:
    """What points one host at the stand-in. `{url}` in a value is its base URL."""

    api: str
    env: Mapping[str, str] = field(default_factory=dict)
    head: str = ""  # TOML before the recorder's entry (a provider table)
    entry: Mapping[str, Any] = field(default_factory=dict)  # keys on the recorder's entry
    files: Callable[[Path, Path], None] | None = None  # more files (home, project)

    def env_for(self, url: str) -> dict[str, str]:
        return {k: v.replace("{url}", url) for k, v in self.env.items()}

    def head_for(self, url: str) -> str:
        return self.head.replace("{url}", url)


def _claude_allow(home: Path, project: Path) -> None:
    """The recorder's tool allowed for the project: no permission prompt per call."""
    tool = f"mcp__{ENTRY_NAME}__echo"

    def allow(doc: dict[str, Any]) -> None:
        perms = doc.setdefault("permissions", {})
        names = perms.setdefault("allow", [])
        if tool not in names:
            names.append(tool)

    merge_json(project / ".claude" / "settings.local.json", allow)


BUILT_IN: dict[str, ModelWiring] = {
    "claude-code": ModelWiring(
        "anthropic",
        env={"ANTHROPIC_BASE_URL": "{url}",
             # 20+ characters: the throwaway ~/.claude.json approves its last 20
             "ANTHROPIC_API_KEY": "sk-ant-mcp-tether-stand-in-0000000000",
             "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
             "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
        files=_claude_allow),
    "codex": ModelWiring(
        "openai",
        env={"OPENAI_API_KEY": "sk-mcp-tether-stand-in"},
        head=(f'model = "{PROVIDER}"\nmodel_provider = "{PROVIDER}"\n'
              "check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n\n"
              f'[model_providers.{PROVIDER}]\nname = "mcp-tether stand-in"\n'
              'base_url = "{url}/v1"\nwire_api = "responses"\nenv_key = "OPENAI_API_KEY"\n'),
        entry={"default_tools_approval_mode": "approve"}),
}


def wiring(host: str | None, api: str | None, env_vars: Sequence[str]) -> ModelWiring:
    """The wiring for `host` (a built-in one, or `api` and `env_vars`); UsageError when
    nothing says which API the host speaks."""
    if api is not None and api not in APIS:
        raise UsageError(f"--model-api is one of {', '.join(APIS)}")
    base = BUILT_IN.get(host or "")
    if base is None and api is None:
        raise UsageError("the tool-calling scenarios need the host's model API: "
                         f"--model-api {'|'.join(APIS)} (built in: "
                         f"{', '.join(f'--host {h}' for h in BUILT_IN)})")
    if base is None:
        base = ModelWiring(str(api))
    env = {**base.env, **dict.fromkeys(env_vars, "{url}")}
    return ModelWiring(api or base.api, env, base.head, base.entry, base.files)
