// ask_user: a question for the human at the frontend.
//
// How it runs: the operation is `interactive`, so the kernel never puts it through the
// plan/apply gate and never calls Invoke for the question. It calls Preview to get the
// prompt (a RenderTree it sends as the frontend's interactive_request, in the overlay
// region, with output_schema as the response schema), waits for the matching
// interactive_response, checks the answer against output_schema and records it as the
// call's result. In a headless run policy denies the call before any of that.
// Invoke answers only a kernel without that route: it validates the question and ends
// with execution_failed, because this process has no human to ask.
import type { JsonObject } from "@bufbuild/protobuf";
import { type RenderNodeInit, r, s, type ToolDefinition, ToolFailure } from "@pluggableharness/tool-kit";

const MAX_OPTIONS = 8;

interface Option {
  label: string;
  description?: string;
}

interface AskArgs {
  question: string;
  header?: string;
  options?: Option[];
  allow_free_text?: boolean;
}

function validate(args: AskArgs): void {
  if (args.question.trim() === "") throw new ToolFailure("invalid_arguments", "question is empty");
  const options = args.options ?? [];
  if (options.length > MAX_OPTIONS)
    throw new ToolFailure("invalid_arguments", `at most ${MAX_OPTIONS} options`);
  const labels = new Set<string>();
  for (const o of options) {
    if (o.label.trim() === "") throw new ToolFailure("invalid_arguments", "an option has an empty label");
    if (labels.has(o.label)) throw new ToolFailure("invalid_arguments", `option "${o.label}" appears twice`);
    labels.add(o.label);
  }
  if (options.length === 1 && args.allow_free_text === false) {
    throw new ToolFailure("invalid_arguments", "a single option with no free-text answer is not a question");
  }
}

/** The prompt the frontend shows. */
export function promptOf(args: AskArgs): RenderNodeInit {
  const options = args.options ?? [];
  const children: RenderNodeInit[] = [];
  if (args.header) children.push(r.text(args.header, "dim"));
  children.push(r.text(args.question, "bold"));
  if (options.length > 0) {
    children.push(
      r.list(
        options.map((o) =>
          o.description ? r.group([r.text(o.label, "bold"), r.text(` - ${o.description}`)]) : r.text(o.label),
        ),
        true,
      ),
    );
  }
  const freeText = options.length === 0 || args.allow_free_text !== false;
  children.push(
    r.text(
      options.length === 0
        ? "Answer in your own words."
        : freeText
          ? "Pick an option or answer in your own words."
          : "Pick one of the options.",
      "dim",
    ),
  );
  return r.group(children);
}

export const askUserTool: ToolDefinition<AskArgs> = {
  name: "ask_user",
  kind: "interactive",
  risk: "read_only",
  description:
    "Ask the user a question and wait for the answer, when a decision only they can make blocks the work. Unavailable in unattended runs.",
  input: s.object(
    {
      question: s.string(),
      header: s.string('Short label, e.g. "Database".'),
      options: s.array(
        s.object({ label: s.string(), description: s.string() }, ["label"]),
        `Choices to offer (at most ${MAX_OPTIONS}).`,
      ),
      allow_free_text: s.boolean("Default true."),
    },
    ["question"],
  ),
  output: s.object(
    {
      answer: s.string("The user's answer: the chosen option's label, or their own words."),
      option_index: s.integer("0-based index of the chosen option, when one was chosen."),
    },
    ["answer"],
  ),
  streaming: false,
  idempotent: false,
  modelText: { field: "answer" },

  invoke(args): Promise<JsonObject> {
    validate(args);
    return Promise.reject(
      new ToolFailure(
        "execution_failed",
        "ask_user is answered through the frontend: the kernel shows the question and records the answer as the " +
          "result. This provider cannot reach a human by itself.",
        { details: { reason: "interactive_only" } },
      ),
    );
  },

  preview(args) {
    validate(args);
    return promptOf(args);
  },

  render(input) {
    if (input.kind === "tool_call") {
      const q = input.arguments["question"];
      return typeof q === "string" ? r.text(`Asked: ${q}`, "bold") : undefined;
    }
    if (!input.payload)
      return input.denied ? r.text("The question was not asked (denied by policy).", "warning") : undefined;
    return r.group([r.text("Answer: ", "dim"), r.text(String(input.payload["answer"] ?? ""))]);
  },
};
