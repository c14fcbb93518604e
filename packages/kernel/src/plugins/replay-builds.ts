// Cached builds a replay loads besides agent.hcl's providers (KernelOptions.replayBuilds):
// an older version of a provider the project still declares, under a name of its own
// ("provider-stamp@0.1.0"). The build is configured, sandboxed and granted the network
// exactly as the declared provider of the same source is, so its Render sees what it saw
// when it wrote the session; one whose source agent.hcl no longer names gets no settings.
import type { AgentConfig, ResolvedProvider } from "@pluggableharness/config";

export function withReplayBuilds(config: AgentConfig, builds: readonly ResolvedProvider[]): AgentConfig {
  if (builds.length === 0) return config;
  const required = [...config.requiredProviders];
  const blocks = [...config.providers];
  const start = { line: 1, column: 1, byte: 0 };
  for (const b of builds) {
    if (required.some((r) => r.localName === b.localName)) continue;
    const declared = config.requiredProviders.find((r) => r.source === b.source);
    required.push(
      declared
        ? { ...declared, localName: b.localName, version: b.version ?? declared.version }
        : {
            localName: b.localName,
            source: b.source,
            version: b.version ?? "",
            constraints: [],
            range: { filename: config.file, start, end: start },
          },
    );
    const block = declared && config.providers.find((p) => p.name === declared.localName);
    if (block) blocks.push({ ...block, name: b.localName });
  }
  return { ...config, requiredProviders: required, providers: blocks };
}
