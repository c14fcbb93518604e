// What a permission request will do, said in one line: the command it runs, the file
// it changes, the URL it fetches — read from the call's arguments by their usual
// names, with the tool's name and a short JSON form as the fallback.
import type { JsonObject } from "@bufbuild/protobuf";
import type { PlanItem } from "@pluggableharness/protocol/plan";
import { brief } from "./describe.ts";

const VERBS: [RegExp, string][] = [
  [/delete|remove|rm\b|unlink/, "delete"],
  [/move|rename|mv\b/, "move"],
  [/create|write|save/, "write"],
  [/edit|replace|patch|apply/, "edit"],
  [/mkdir/, "create the directory"],
];

function str(input: JsonObject, ...names: string[]): string | undefined {
  for (const n of names) {
    const v = input[n];
    if (typeof v === "string" && v.trim() !== "") return v;
  }
  return undefined;
}

/** "run `make test`", "edit src/a.ts", "fetch https://…", or the call in short. */
export function permissionAction(item: PlanItem): string {
  const input = (item.input ?? {}) as JsonObject;
  const command = str(input, "command", "cmd", "script");
  if (command) return `run ${oneLine(command, 160)}`;
  const url = str(input, "url", "uri", "href");
  if (url) return `fetch ${oneLine(url, 160)}`;
  const path = str(input, "path", "file_path", "file", "filename", "target", "destination");
  if (path) {
    const name = item.toolName.toLowerCase();
    const verb = VERBS.find(([re]) => re.test(name))?.[1] ?? `use ${item.toolName} on`;
    const to = str(input, "new_path", "destination", "to");
    return `${verb} ${oneLine(path, 120)}${verb === "move" && to ? ` → ${oneLine(to, 120)}` : ""}`;
  }
  const query = str(input, "query", "pattern", "q");
  if (query) return `${item.toolName} “${oneLine(query, 120)}”`;
  const args = brief(input, 100);
  return `call ${item.toolName}${args && args !== "{}" ? ` with ${args}` : ""}`;
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s*\n\s*/g, " ⏎ ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
