// The one line a session start, `agent validate` and `agent mcp add` print for a provider
// whose operations come from its configuration but that offers none this time (an MCP server
// that cannot start or be reached): the session goes on without its tools.

const MCP = /(^|\/)(provider-)?mcp$/i;

export function unavailableNotice(name: string, source: string, why: string): string {
  const what = MCP.test(source) ? `MCP server "${name}"` : `provider "${name}"`;
  const check = MCP.test(source) ? " Check it with `agent mcp list`." : "";
  const reason = why.trim().replace(/[.\s]+$/, "");
  return `${what} is unavailable, so its tools are left out of this session: ${reason}.${check}`;
}
