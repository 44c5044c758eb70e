"""Which servers the survey lists: the most downloaded stdio MCP servers, by fixed rules.

    python -m mcp_tether.survey.select [--npm N] [--pypi N] [--packages DIR] [--list FILE]

Reads the package lists of the `env` entry (`npm.tsv`: name, version, monthly downloads,
summary; `pypi.tsv`: name, version, month, rank among the 15,000 most downloaded,
summary), keeps what the rules below call a stdio MCP server, orders npm by downloads
and PyPI by rank, and prints the first N of each as survey-list lines, the figure in a
comment. With `--list`, a package the list already has keeps that line's options
(env=, needs=, arguments), with the version from the package list.

The rules, in order (each package is judged on its name and its summary, lower case):
1. MCP at all: the name has `mcp`, or the summary says "model context protocol" or `mcp`.
2. Not a part for building or connecting to servers: no word of `NOT_A_SERVER` in the
   name (SDK, framework, adapter, client, inspector, types, plugin, ...), nor in the
   summary unless the name itself says server (`*-mcp`, `mcp-server-*`: "implement
   designs in any framework" is no framework); not a per-platform binary of another
   package (`-linux-x64`, `-darwin-arm64`, ...).
3. Not named in `EXCLUDED`: each entry checked by hand (its summary or README), the
   reason beside it (HTTP-only, a client, an installer, a library, a renamed shim...).
   `INCLUDED` names the few stdio servers rules 2 and 4 would wrongly leave out (a
   bridge whose summary says "clients"), each with its reason; they skip rules 2-4.
4. A server: the name or summary says server, or the name is `*-mcp`, `mcp-*` or
   `@scope/mcp`.
What a server needs to start (a database, an upstream) is said in the list by `needs=`;
`SERVICE_WORDS` guesses it from the summary for a new line, to be checked by hand.

Guarantees: pure reading of the files given; nothing is fetched or installed.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from mcp_tether.survey.listfile import Entry, parse_list

__all__ = ["Candidate", "candidates", "is_server", "main", "EXCLUDED", "INCLUDED", "NOT_A_SERVER"]

PACKAGES = Path("/work/.library/env/packages")

NOT_A_SERVER = re.compile(
    r"\b(sdk|framework|adapters?|clients?|inspector|types|typings|polyfill|plugin|addon|"
    r"middleware|transport|instrumentation|provider|toolkit|library|helpers|utils|"
    r"codegen|generator|scaffold|template|boilerplate|gateway|router|proxy for|"
    r"installer|evals?|test(ing)? harness|bundles?|schemas?|analytics sdk)\b")
PLATFORM_BINARY = re.compile(r"-(linux|darwin|win32|windows|macos)-(x64|arm64|amd64|ia32)$")
IS_SERVER = re.compile(r"\bservers?\b|\bmcp[- ]server\b")
SERVER_NAME = re.compile(r"(^|[/-])mcp($|-)|-mcp$|^mcp-|/mcp$")

# Checked by hand; the reason is the package's own summary or README, not a guess.
EXCLUDED: dict[str, str] = {
    # npm
    "npm:@orval/mcp": "orval's code generator output target, not a server",
    "npm:@expo/mcp-tunnel": "a tunnel client to Expo's hosted MCP",
    "npm:@storybook/addon-mcp": "runs inside Storybook's dev server over HTTP",
    "npm:@storybook/mcp": "served by Storybook's dev server over HTTP",
    "npm:@smithery/cli": "an installer for other servers",
    "npm:tmcp": "a server library",
    "npm:mcporter": "a client runtime and CLI",
    "npm:@hono/mcp": "HTTP middleware",
    "npm:@kubb/cli": "a code generator's CLI",
    "npm:@modelcontextprotocol/ext-apps": "an SDK extension",
    "npm:@modelcontextprotocol/inspector": "the MCP Inspector: a client",
    "npm:@modelcontextprotocol/inspector-server": "the MCP Inspector's proxy: a client",
    "npm:mcp-handler": "HTTP adapter library",
    "npm:@salesforce/mcp-provider-api": "a library for Salesforce's server",
    "npm:@metorial/mcp-session": "a library", "npm:@metorial/mcp-sdk-utils": "a library",
    "npm:@metorial/mcp-server-sdk": "a library",
    "npm:fastmcp": "a framework", "npm:firecrawl-fastmcp": "a framework (fork of fastmcp)",
    "npm:mcp-framework": "a framework", "npm:@rekog/mcp-nest": "a NestJS module",
    "npm:@anthropic-ai/mcpb": "MCP Bundle tooling",
    "npm:n8n-nodes-mcp": "n8n nodes: a client inside n8n",
    "npm:mcp-evals": "an evaluation GitHub Action",
    "npm:use-mcp": "a React client hook",
    "npm:@vercel/mcp-adapter": "HTTP adapter for Next.js",
    "npm:supergateway": "exposes stdio servers over SSE/HTTP: a gateway, not a stdio server",
    "npm:mcp-proxy": "npm's mcp-proxy serves SSE/HTTP in front of a stdio server",
    "npm:@ag-ui/mcp-apps-middleware": "middleware",
    "npm:hono-mcp-server-sse-transport": "an SSE transport",
    "npm:@wong2/mcp-cli": "a CLI client", "npm:@mcp-use/cli": "a build CLI",
    "npm:@mcp-use/inspector": "an inspector (client)", "npm:mcp-use": "a framework",
    "npm:@traceloop/instrumentation-mcp": "instrumentation",
    "npm:@clerk/mcp-tools": "a library", "npm:agentdb": "a database library with an MCP mode",
    "npm:@composio/mcp": "an installer CLI for Composio's hosted servers",
    "npm:vibe-kanban": "a kanban app's npx launcher; its MCP is a mode of the app",
    "npm:@claude-flow/cli": "an agent orchestration CLI",
    "npm:skybridge": "a framework", "npm:xmcp": "a framework", "npm:mcp-lite": "a library",
    "npm:@zuplo/mcp": "an SDK", "npm:@nuxtjs/mcp-toolkit": "a Nuxt module (HTTP)",
    "npm:@mcp-ui/server": "an SDK", "npm:@mcp-ui/client": "an SDK",
    "npm:@redocly/mcp-typescript-sdk": "an SDK", "npm:@mcp-use/modelcontextprotocol-sdk": "an SDK",
    "npm:@gleanwork/mcp-config-schema": "schemas", "npm:openapi-mcp-generator": "a generator",
    "npm:@backstage/plugin-mcp-actions-backend": "a Backstage backend plugin (HTTP)",
    "npm:@payloadcms/plugin-mcp": "a Payload CMS plugin (HTTP)",
    "npm:@theia/ai-mcp": "Theia IDE integration (a client)",
    "npm:@supabase/mcp-utils": "a library", "npm:@salesforce/mcp-provider-dx-core": "a library",
    "npm:workers-mcp": "a transport to a Cloudflare Worker (remote)",
    "npm:@mintlify/mcp": "an installer", "npm:playbooks": "an installer",
    "npm:@railway/mcp-server": "a deprecated shim", "npm:@21st-dev/magic": "a compatibility shim",
    "npm:agnost": "an analytics SDK", "npm:middy-mcp": "middleware",
    "npm:@kimuson/modular-mcp": "a proxy in front of other servers (configured by file)",
    "npm:@mcp-b/global": "a browser polyfill", "npm:@mcp-b/webmcp-types": "types",
    "npm:@mcp-b/webmcp-polyfill": "a browser polyfill",
    "npm:@mastra/mcp": "a framework's MCP client/server library",
    "npm:@ai-sdk/mcp": "the AI SDK's MCP client",
    "npm:@langchain/mcp-adapters": "adapters (a client)",
    "npm:@tmcp/session-manager": "a library",
    "npm:@elementor/editor-mcp": "a WordPress editor library",
    "npm:@react-grab/mcp": "a browser dev tool's bridge",
    "npm:@kubb/plugin-mcp": "a code generator plugin",
    "npm:@mcp-b/transports": "transports",
    "npm:@dynatrace-oss/dynatrace-mcp-server": "deprecated (its summary: migrate to another)",
    "npm:@atlassian-dc-mcp/jira": "kept out: one of a family; the survey has mcp-atlassian",
    # PyPI
    "pypi:mcp": "the Python SDK", "pypi:fastmcp": "a framework", "pypi:fastmcp-slim": "a framework",
    "pypi:fastapi-mcp": "a FastAPI extension (HTTP)", "pypi:databricks-mcp": "helpers (a library)",
    "pypi:mcp-proxy-for-aws": "a proxy to AWS's remote (HTTP) servers",
    "pypi:arcade-mcp-server": "a framework", "pypi:arcade-mcp": "a platform CLI",
    "pypi:cuga": "an agent", "pypi:mcpadapt": "adapters",
    "pypi:mcpo": "exposes servers as OpenAPI (HTTP)",
    "pypi:runlayer": "runs servers over HTTP", "pypi:toolbox-adk": "an agent kit integration",
    "pypi:django-mcp-server": "a Django extension (HTTP)", "pypi:hol-guard": "a scanner",
    "pypi:fast-agent-mcp": "an agent framework (a client)", "pypi:nvidia-nat-mcp": "a client",
    "pypi:dcc-mcp-core": "a library", "pypi:harbormaster-mcp": "a router and dashboard",
    "pypi:openinference-instrumentation-mcp": "instrumentation",
    "pypi:fastmcp-extensions": "a library", "pypi:uipath-mcp": "an SDK",
    "pypi:llama-index-tools-mcp": "a client integration", "pypi:winrmcp": "not MCP (WinRM copy)",
    "pypi:workspace-mcp": "Streamable HTTP & SSE server by default",
    "pypi:duckduckgo-mcp": "renamed to web-forager (a shim)",
    "pypi:linkedin-scraper-mcp": "renamed (a transitional shim)",
    "pypi:ha-mcp-dev": "a dev build of ha-mcp", "pypi:oc-piloci": "a memory service (HTTP)",
    "pypi:airbyte-internal-ops": "internal tooling",
    "pypi:tooluniverse": "a tool collection library",
    "pypi:code-review-graph": "a CLI with an MCP mode among others",
    "pypi:opentelemetry-instrumentation-mcp": "instrumentation",
    "pypi:langchain-mcp-adapters": "adapters (a client)",
    "pypi:mcp-use": "a framework", "pypi:kglite": "a library",
    "npm:mcp-http-server": "an HTTP server (its summary)",
}
# Kept although rule 2 or 4 would leave them out: stdio servers, checked by hand.
INCLUDED: dict[str, str] = {
    "npm:mcp-remote": "a stdio server that bridges to a remote one (needs an upstream)",
    "pypi:web-forager": "a stdio MCP server (its summary: 'MCP server and ... Skills')",
}
# A summary word -> the service a new line's server probably needs (checked by hand).
SERVICE_WORDS = {"postgres": "postgres", "mysql": "mariadb", "mariadb": "mariadb",
                 "redis": "redis", "mongodb": "mongodb", "elasticsearch": "elasticsearch",
                 "kubernetes": "a-kubernetes-cluster", "qdrant": "qdrant",
                 "clickhouse": "clickhouse", "neo4j": "neo4j", "opensearch": "opensearch"}


@dataclass(frozen=True)
class Candidate:
    registry: str  # npm | pypi
    name: str
    version: str
    figure: int  # npm: downloads a month; pypi: rank (1 = most downloaded)
    summary: str

    @property
    def spec(self) -> str:
        sep = "@" if self.registry == "npm" else "=="
        return f"{self.registry}:{self.name}{sep}{self.version}"

    @property
    def figure_text(self) -> str:
        return (f"{self.figure} downloads a month" if self.registry == "npm"
                else f"rank {self.figure} among PyPI's 15,000 most downloaded")


def is_server(registry: str, name: str, summary: str) -> tuple[bool, str]:
    """(kept, why not) by rules 1-4 of the module docstring."""
    key = f"{registry}:{name}"
    if key in INCLUDED:
        return True, ""
    n, s = name.lower(), summary.lower()
    if "mcp" not in n and "model context protocol" not in s and not re.search(r"\bmcp\b", s):
        return False, "not MCP"
    if PLATFORM_BINARY.search(n):
        return False, "a per-platform binary of another package"
    words = n.replace("-", " ").replace("/", " ")
    named_server = bool(IS_SERVER.search(words) or SERVER_NAME.search(n))
    # The summary's words count only for a name that does not say server: "implement
    # designs in any framework" is not a framework.
    m = NOT_A_SERVER.search(words) or (None if named_server else NOT_A_SERVER.search(s))
    if m and not IS_SERVER.search(words):
        return False, f"a part, not a server ({m.group(0)!r})"
    if key in EXCLUDED:
        return False, EXCLUDED[key]
    if not (IS_SERVER.search(s) or IS_SERVER.search(n.replace("-", " ")) or SERVER_NAME.search(n)):
        return False, "not said to be a server"
    return True, ""


def _rows(path: Path) -> list[list[str]]:
    with path.open(newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return rows[1:]


def candidates(packages: Path = PACKAGES) -> dict[str, list[Candidate]]:
    """Every kept package of both lists, npm by downloads, PyPI by rank."""
    npm, pypi = [], []
    for row in _rows(packages / "npm.tsv"):
        if len(row) >= 3 and row[2].isdigit():
            c = Candidate("npm", row[0], row[1], int(row[2]), row[3] if len(row) > 3 else "")
            if is_server(c.registry, c.name, c.summary)[0]:
                npm.append(c)
    for row in _rows(packages / "pypi.tsv"):
        if len(row) >= 4 and row[3].isdigit():
            c = Candidate("pypi", row[0], row[1], int(row[3]), row[4] if len(row) > 4 else "")
            if is_server(c.registry, c.name, c.summary)[0]:
                pypi.append(c)
    npm.sort(key=lambda c: (-c.figure, c.name))
    pypi.sort(key=lambda c: (c.figure, c.name))
    return {"npm": npm, "pypi": pypi}


def _options(entry: Entry) -> str:
    """The options of an existing list line, as a line's words again."""
    words = []
    for key in ("launch", "bin", "needs", "name"):
        if getattr(entry, key):
            words.append(f"{key}={getattr(entry, key)}")
    words += [f"env={k}={v}" for k, v in entry.env.items()]
    if entry.call:
        words.append(f"call={entry.call[0]}:{json.dumps(entry.call[1])}")
    if entry.timeout:
        words.append(f"timeout={entry.timeout:g}")
    out = " ".join(shlex.quote(w) for w in words)
    if entry.args:
        out += " -- " + " ".join(shlex.quote(a) for a in entry.args)
    return out.strip()


def _key(registry: str, name: str) -> str:
    """npm names as they are; PyPI names normalised (PEP 503: `a.b_c` is `a-b-c`)."""
    if registry == "pypi":
        name = re.sub(r"[-_.]+", "-", name).lower()
    return f"{registry}:{name}"


def lines(picked: list[Candidate], known: dict[str, list[Entry]]) -> list[str]:
    out = []
    for c in picked:
        out.append(f"# {c.figure_text}: {c.summary[:80]}")
        entries: list[Entry | None] = [*known.get(_key(c.registry, c.name), [])] or [None]
        for e in entries:
            # A known line keeps its spelling of the name (uvx runs the command of
            # that name: `awslabs.x-mcp-server`, not its normalised `awslabs-x-...`).
            name = e.spec.name if e is not None else c.name
            base = Candidate(c.registry, name, c.version, c.figure, c.summary).spec
            opts = _options(e) if e is not None else ""
            if e is None:
                need = next((v for k, v in SERVICE_WORDS.items() if k in c.summary.lower()), None)
                opts = f"needs={need}" if need else ""
            figure = f"downloads={c.figure}" if c.registry == "npm" else f"rank={c.figure}"
            out.append(f"{base} {figure} {opts}".rstrip())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_tether.survey.select",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--npm", type=int, default=80)
    ap.add_argument("--pypi", type=int, default=35)
    ap.add_argument("--packages", type=Path, default=PACKAGES)
    ap.add_argument("--list", type=Path, help="an existing list whose options to keep")
    ap.add_argument("--why", metavar="NAME", help="print why NAME is kept or not, then exit")
    a = ap.parse_args(argv)
    if a.why:
        for reg in ("npm.tsv", "pypi.tsv"):
            for row in _rows(a.packages / reg):
                if row and row[0] == a.why:
                    reg_name = reg.split(".")[0]
                    kept, why = is_server(reg_name, row[0], row[-1] if len(row) > 3 else "")
                    print(f"{reg}: {'kept' if kept else 'left out: ' + why}")
        return 0
    known: dict[str, list[Entry]] = {}
    if a.list:
        for e in parse_list(a.list):
            known.setdefault(_key(e.spec.ecosystem, e.spec.name), []).append(e)
    cands = candidates(a.packages)
    print("# --- npm, by downloads a month")
    print("\n".join(lines(cands["npm"][:a.npm], known)))
    print("\n# --- PyPI, by rank among the 15,000 most downloaded")
    print("\n".join(lines(cands["pypi"][:a.pypi], known)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
