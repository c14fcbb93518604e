// read_file: a line range of a text file, line-numbered, within a byte budget.
import { defineTool, looksBinary, r, s, ToolFailure } from "@pluggableharness/tool-kit";
import { guard, readUpTo, resolvePath } from "./files.ts";
import { type ImageInfo, imageInfo } from "./image.ts";
import { settings } from "./settings.ts";

const DEFAULT_LIMIT = 2000;
const MAX_LINE_CHARS = 2000;

export const readFileTool = defineTool({
  name: "read_file",
  kind: "data_source",
  risk: "read_only",
  description:
    "Read a text file; lines come back numbered. Reads up to 2000 lines from offset; page long files with offset and limit. Images are returned as images.",
  input: s.object(
    {
      path: s.string(),
      offset: s.integer("1-based first line."),
      limit: s.integer(),
    },
    ["path"],
  ),
  output: s.object(
    {
      path: s.string("The path as requested."),
      content: s.string("The selected lines, each as '<line number>\\t<text>'."),
      start_line: s.integer("First line shown (0 when nothing is shown)."),
      end_line: s.integer("Last line shown (0 when nothing is shown)."),
      total_lines: s.integer("Lines in the file."),
      size_bytes: s.integer("File size in bytes."),
      binary: s.boolean("The file is binary; content is empty."),
      truncated: s.boolean("Not every line from offset to the end of the file is shown."),
      notice: s.string("Why the content is incomplete and how to read the rest; empty when complete."),
      image: s.object(
        {
          media_type: s.string("image/png, image/jpeg, image/gif or image/webp."),
          width: s.integer("Width in pixels (0 when the header does not say)."),
          height: s.integer("Height in pixels (0 when the header does not say)."),
        },
        ["media_type", "width", "height"],
      ),
      images: s.array(
        s.object(
          { media_type: s.string("The image's media type."), data: s.string("The file's bytes, base64.") },
          ["media_type", "data"],
        ),
        "The image itself, for the model (absent for text files and images over max_image_bytes).",
      ),
    },
    [
      "path",
      "content",
      "start_line",
      "end_line",
      "total_lines",
      "size_bytes",
      "binary",
      "truncated",
      "notice",
    ],
  ),
  streaming: false,
  concurrency: { safe: true },
  defaultTimeoutMs: 30_000,
  idempotent: true,
  // The model reads the lines themselves, not JSON with escaped newlines.
  modelText: { field: "content" },
  modelImages: "images",

  async invoke(args, ctx) {
    const offset = args.offset ?? 1;
    const limit = args.limit ?? DEFAULT_LIMIT;
    if (offset < 1) throw new ToolFailure("invalid_arguments", "offset must be at least 1");
    if (limit < 1) throw new ToolFailure("invalid_arguments", "limit must be at least 1");
    const file = await resolvePath(args.path, ctx.workingDirectory);
    if (!file.exists) throw new ToolFailure("not_found", `${args.path} does not exist`);
    const { maxReadBytes, maxFileBytes, maxImageBytes } = settings();
    return guard(args.path, async () => {
      // Opened once, checked to be the resolved file (no link swapped in, one hard link);
      // every byte shown comes from this descriptor.
      const { handle, stat: st } = await settings().jail.openForRead(file);
      let data: Buffer;
      let whole: Buffer | undefined;
      try {
        if (st.isDirectory()) {
          throw new ToolFailure("invalid_arguments", `${args.path} is a directory; use list_directory`);
        }
        data = await readUpTo(handle, Math.min(st.size, maxFileBytes));
        if (imageInfo(data) && st.size <= maxImageBytes)
          whole = data.length >= st.size ? data : await readUpTo(handle, st.size);
      } finally {
        await handle.close();
      }
      const base = { path: args.path, size_bytes: st.size };
      const info = imageInfo(data);
      if (info) return readImage(whole, args.path, st.size, info, maxImageBytes);
      // A read with no lines to show: a binary file, or an empty one.
      const nothing = (binary: boolean, notice: string) => ({
        ...base,
        content: "",
        start_line: 0,
        end_line: 0,
        total_lines: 0,
        binary,
        truncated: false,
        notice,
      });
      if (looksBinary(data)) return nothing(true, `binary file (${st.size} bytes); content not shown`);
      const scanCut = st.size > data.length;
      const text = data.toString("utf8");
      const lines = text.split("\n");
      if (lines.at(-1) === "") lines.pop();
      const total = lines.length;
      if (total === 0) return nothing(false, "");
      if (offset > total) {
        throw new ToolFailure(
          "invalid_arguments",
          `offset ${offset} is past the end of the file (${total} lines)`,
        );
      }
      const out: string[] = [];
      let bytes = 0;
      let end = offset - 1;
      let budgetHit = false;
      const stop = Math.min(total, offset - 1 + limit);
      for (let i = offset - 1; i < stop; i++) {
        let line = lines[i]!;
        if (line.length > MAX_LINE_CHARS) line = `${line.slice(0, MAX_LINE_CHARS)}… [line shortened]`;
        const entry = `${String(i + 1).padStart(6)}\t${line}`;
        const size = Buffer.byteLength(entry) + 1;
        if (bytes + size > maxReadBytes && out.length > 0) {
          budgetHit = true;
          break;
        }
        out.push(entry);
        bytes += size;
        end = i + 1;
      }
      const notices: string[] = [];
      if (budgetHit) {
        notices.push(
          `[truncated: the ${maxReadBytes}-byte output limit was reached after line ${end}; call read_file with offset=${end + 1} to continue]`,
        );
      } else if (end < total) {
        notices.push(
          `[showing lines ${offset}-${end} of ${total}; call read_file with offset=${end + 1} to continue]`,
        );
      }
      if (scanCut) {
        notices.push(`[the file is ${st.size} bytes; only its first ${maxFileBytes} bytes were scanned]`);
      }
      return {
        ...base,
        content: out.join("\n"),
        start_line: offset,
        end_line: end,
        total_lines: total,
        binary: false,
        truncated: notices.length > 0,
        notice: notices.join(" "),
      };
    });
  },

  render(input) {
    if (input.kind !== "tool_result" || !input.payload) return undefined;
    const p = input.payload;
    if (p["image"]) return r.text(String(p["content"] ?? ""), "bold");
    const summary = p["binary"]
      ? `Read ${p["path"]} (binary, not shown)`
      : `Read ${p["path"]}, lines ${p["start_line"]}-${p["end_line"]} of ${p["total_lines"]}`;
    const children = [r.code(String(p["content"] ?? ""))];
    if (p["notice"]) children.push(r.text(String(p["notice"]), "warning"));
    return r.collapsible(summary, children, true);
  },
});

function readImage(bytes: Buffer | undefined, path: string, size: number, info: ImageInfo, max: number) {
  const dims = info.width && info.height ? `${info.width}x${info.height} pixels, ` : "";
  const image = { media_type: info.mediaType, width: info.width ?? 0, height: info.height ?? 0 };
  const base = {
    path,
    start_line: 0,
    end_line: 0,
    total_lines: 0,
    size_bytes: size,
    binary: true,
    image,
  };
  if (size > max || bytes === undefined) {
    const notice = `the image is ${size} bytes, over the ${max}-byte max_image_bytes limit; not shown`;
    return {
      ...base,
      content: `${info.format} image ${path} (${dims}${size} bytes): ${notice}`,
      truncated: true,
      notice,
    };
  }
  return {
    ...base,
    content: `${info.format} image ${path} (${dims}${bytes.length} bytes)`,
    truncated: false,
    notice: "",
    images: [{ media_type: info.mediaType, data: bytes.toString("base64") }],
  };
}
