// The model-provider checks catch a provider that breaks the rules.
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { runConformance } from "../../src/index.ts";

it("reports each violation of a broken model provider and exits 1", async () => {
  const report = await runConformance({
    executable: fileURLToPath(new URL("./fixtures/broken-model.ts", import.meta.url)),
    config: { api_key: "real-key" },
  });
  const status = (id: string) => report.results.find((r) => r.id === id)?.status;
  expect(report.exitCode).toBe(1);
  expect(status("model.describe")).toBe("fail"); // version "v1" is not semver
  expect(status("model.capabilities.valid")).toBe("fail");
  expect(status("model.configure.missing_required")).toBe("fail");
  expect(status("model.configure.no_echo")).toBe("fail");
  expect(status("model.stream.shape")).toBe("fail");
  expect(status("model.errors.unknown_model")).toBe("fail");
  expect(status("model.secrets")).toBe("fail");
  expect(status("model.count_tokens")).toBe("warn");
  const shape = report.results.find((r) => r.id === "model.stream.shape")!;
  expect(shape.reason).toMatch(/second stop|stop/);
});
