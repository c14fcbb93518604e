// The web UI: one EventSource per tab is one frontend connection (ServerEvents as their
// protobuf JSON form); ClientEvents go back as JSON to /send, naming that connection.
// The page subscribes one session at a time (resume: the backfill replays it, then it
// streams live), shows what waits for an answer, and lists sessions as a tree of
// sub-agents kept current by session_tree_update events.
import { isAssistantMessage, markdownElement, renderNode, renderTree } from "/render.js";

const $ = (id) => document.getElementById(id);
const transcript = $("transcript");
const requests = $("requests");
const prompt = $("prompt");
const statusLine = $("status");
const errors = $("errors");
const widgets = $("widgets");

const state = {
  connection: "",
  sessionId: "",
  replayOnly: false,
  status: "",
  /** targetId -> { el, kind, text } */
  streams: new Map(),
  /** plan item id or call id -> card element */
  cards: new Map(),
  /** ids this tab answered (so a resolution is not reported as "decided elsewhere") */
  answered: new Set(),
  /** sessionId -> { info, status, children:Set } */
  sessions: new Map(),
  requestCounter: 0,
  pendingOpen: "",
  /** Names of the slash commands the open session's providers register; null: not told yet. */
  commands: null,
};

const STATUS_TEXT = {
  SESSION_STATUS_RUNNING: "running",
  SESSION_STATUS_COMPLETED: "completed",
  SESSION_STATUS_ERROR_MAX_TURNS: "stopped: turn limit",
  SESSION_STATUS_ERROR_MAX_BUDGET_USD: "stopped: budget",
  SESSION_STATUS_ERROR_MAX_WALL_CLOCK: "stopped: time limit",
  SESSION_STATUS_CANCELLED: "cancelled",
  SESSION_STATUS_FAILED: "failed",
};
const statusText = (s) => STATUS_TEXT[s] ?? "idle";

const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

const nextId = (prefix) => `${prefix}-${++state.requestCounter}`;

async function post(event) {
  if (!state.connection) return;
  const res = await fetch("/send", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ connection: state.connection, event }),
  });
  if (!res.ok) showError(`${res.status}: ${(await res.text()).trim()}`);
}

function showError(message) {
  const p = el("p", "", message);
  errors.replaceChildren(p);
  setTimeout(() => {
    if (p.isConnected) p.remove();
  }, 10_000);
}

function showNotice(message) {
  const p = el("p", "notice", message);
  p.setAttribute("role", "status");
  errors.replaceChildren(p);
}

function setCommands(registry) {
  state.commands = new Set((registry?.commands ?? []).map((c) => c.spec?.name).filter(Boolean));
}

function scrollDown() {
  transcript.scrollTop = transcript.scrollHeight;
}

function setStatus(status, detail) {
  state.status = status;
  const busy = status === "SESSION_STATUS_RUNNING";
  statusLine.textContent = state.sessionId
    ? `${statusText(status)}${detail ? ` — ${detail}` : ""}${state.replayOnly ? " (read-only)" : ""}`
    : "no session";
  $("interrupt").disabled = !busy || !state.sessionId;
  $("send").disabled = state.replayOnly;
  document.body.dataset.status = statusText(status);
}

function setTitle(info) {
  const title = info?.title || (state.sessionId ? `session ${state.sessionId}` : "No session");
  $("session-title").textContent = title;
  document.title = `${title} — agent`;
}

// ---- the transcript ---------------------------------------------------------

function closeStreams(kinds) {
  for (const [id, s] of state.streams) {
    if (!kinds || kinds.includes(s.kind)) {
      s.el.remove();
      state.streams.delete(id);
    }
  }
}

function addEntry(node, cls) {
  const entry = el("article", `entry ${cls ?? ""}`);
  entry.append(node);
  transcript.append(entry);
  scrollDown();
  return entry;
}

/** Sends an activated ActionNode back unchanged; the kernel checks it and applies policy. */
function triggerAction(a) {
  post({
    sessionId: state.sessionId,
    actionTrigger: { nodeId: a.id, toolName: a.toolName, args: a.args ?? {}, provider: a.provider },
  });
}

function onRender(content) {
  const region = content.region ?? "REGION_MAIN_CHAT";
  if (region === "REGION_SIDEBAR") {
    // Widgets (the task list): kept beside the transcript, replaced as they update.
    const node = renderTree(content.content, { onAction: triggerAction });
    if (content.replace) widgets.replaceChildren(node);
    else widgets.append(node);
    widgets.hidden = false;
    return;
  }
  if (region === "REGION_TOP_BAR" || region === "REGION_HOTKEY_HINTS" || region === "REGION_INPUT_BAR") {
    const text = renderNode(content.content?.root).textContent;
    statusLine.title = text;
    return;
  }
  // A finished unit supersedes whatever streamed for it.
  closeStreams();
  const tree = content.content;
  const head = tree?.root?.group?.children?.[0]?.text;
  const cls = isAssistantMessage(tree)
    ? "assistant"
    : head?.style === "TEXT_STYLE_BOLD" && head.content?.startsWith("User")
      ? "user-render"
      : region === "REGION_OVERLAY"
        ? "note"
        : "";
  addEntry(
    renderTree(tree, {
      onSession: (id) => openSession(id),
      onAction: triggerAction,
    }),
    cls,
  );
}

let paintQueued = false;
function onDelta(d) {
  const kind =
    d.kind === "STREAM_DELTA_KIND_THINKING"
      ? "thinking"
      : d.kind === "STREAM_DELTA_KIND_TOOL_OUTPUT"
        ? "tool"
        : "text";
  let s = state.streams.get(d.targetId);
  if (!s) {
    const box =
      kind === "thinking"
        ? el("details", "thinking")
        : kind === "tool"
          ? el("div", "tool-output")
          : el("div", "");
    if (kind === "thinking") box.append(el("summary", "", "Thinking…"));
    const body = kind === "text" ? el("div", "md") : el("pre");
    box.append(body);
    const entry = addEntry(box, `streaming ${kind}`);
    s = { el: entry, body, kind, text: "" };
    state.streams.set(d.targetId, s);
  }
  s.text += d.text ?? "";
  if (kind !== "text") {
    s.body.textContent = s.text;
    scrollDown();
    return;
  }
  // Markdown is re-parsed at most once a frame, however fast the tokens come.
  s.dirty = true;
  if (paintQueued) return;
  paintQueued = true;
  requestAnimationFrame(() => {
    paintQueued = false;
    for (const st of state.streams.values()) {
      if (st.kind !== "text" || !st.dirty) continue;
      st.dirty = false;
      const md = markdownElement(st.text);
      st.body.replaceWith(md);
      st.body = md;
    }
    scrollDown();
  });
}

// ---- requests waiting for an answer -----------------------------------------

function argsText(input) {
  try {
    return JSON.stringify(input ?? {}, null, 2);
  } catch {
    return "";
  }
}

/** Who asks, when it is a sub-agent and not the session itself (as the terminal UI says it). */
function originText(origin) {
  if (!origin?.sessionId) return "";
  const depth = Number(origin.depth ?? 0);
  return `sub-agent ${origin.profile || "?"}${depth > 1 ? ` (depth ${depth})` : ""} · ${origin.sessionId}`;
}

function permissionCard(item, origin) {
  if (state.cards.has(item.id)) return;
  const card = el("section", "request permission");
  card.setAttribute("aria-label", `Permission: ${item.provider}.${item.toolName}`);
  card.dataset.item = item.id;
  card.append(el("h3", "", `Allow ${item.provider}.${item.toolName}?`));
  const who = originText(origin);
  if (who) card.append(el("p", "t origin", `Asked by ${who}`));
  if (item.description) card.append(el("p", "", item.description));
  if (item.reason) card.append(el("p", "t dim", item.reason));
  if (item.preview?.root) card.append(renderTree(item.preview));
  const details = el("details");
  details.append(el("summary", "", "Arguments"), el("pre", "", argsText(item.input)));
  card.append(details);
  const buttons = el("div", "buttons");
  const decide = (decision, scope) => {
    state.answered.add(item.id);
    for (const b of buttons.querySelectorAll("button")) b.disabled = true;
    post({
      sessionId: state.sessionId,
      planDecision: { planItemId: item.id, decision, scope },
    });
  };
  const allow = el("button", "primary", "Allow once");
  allow.type = "button";
  allow.addEventListener("click", () => decide("CLIENT_DECISION_ALLOW", "PLAN_DECISION_SCOPE_ONCE"));
  const session = el("button", "", "Allow for this session");
  session.type = "button";
  session.addEventListener("click", () => decide("CLIENT_DECISION_ALLOW", "PLAN_DECISION_SCOPE_SESSION"));
  const deny = el("button", "", "Deny");
  deny.type = "button";
  deny.addEventListener("click", () => decide("CLIENT_DECISION_DENY", "PLAN_DECISION_SCOPE_ONCE"));
  buttons.append(allow, session, deny);
  card.append(buttons);
  requests.append(card);
  state.cards.set(item.id, card);
  allow.focus({ preventScroll: true });
}

/** The label of each item of a prompt's first numbered list (ask_user's options). */
function optionLabels(node) {
  const firstText = (n) => n?.text?.content ?? (n?.group?.children ?? []).map(firstText).find((t) => t);
  if (!node) return [];
  if (node.list?.ordered) return (node.list.items ?? []).map((i) => (firstText(i) ?? "").trim());
  for (const c of node.group?.children ?? node.collapsible?.children ?? []) {
    const found = optionLabels(c);
    if (found.length > 0) return found;
  }
  return [];
}

function questionCard(q) {
  if (state.cards.has(q.callId)) return;
  const card = el("section", "request question");
  card.setAttribute("aria-label", `Question from ${q.toolName}`);
  card.append(el("h3", "", `${q.toolName} asks`));
  const who = originText(q.origin);
  if (who) card.append(el("p", "t origin", `Asked by ${who}`));
  if (q.prompt?.root) card.append(renderTree(q.prompt));
  // The schema's properties in their JSON form: a list of { name, schema }.
  const listed = q.responseSchema?.properties ?? [];
  const props = Array.isArray(listed) ? listed.map((p) => p.name) : Object.keys(listed);
  const field = props.length === 1 ? props[0] : "answer";
  const id = `answer-${q.callId}`;
  const label = el("label", "", "Your answer");
  label.htmlFor = id;
  const input = el("textarea");
  input.id = id;
  input.rows = 2;
  const send = el("button", "primary", "Answer");
  send.type = "button";
  const buttons = [send];
  const answer = (response) => {
    state.answered.add(q.callId);
    for (const b of buttons) b.disabled = true;
    post({ sessionId: state.sessionId, interactiveResponse: { callId: q.callId, response } });
  };
  send.addEventListener("click", () => answer({ [field]: input.value }));
  // Each listed option is a button, when the answer says which option was chosen.
  const indexed = props.includes("option_index");
  const options = indexed ? optionLabels(q.prompt?.root) : [];
  if (options.length > 0) {
    const row = el("div", "options");
    row.setAttribute("role", "group");
    row.setAttribute("aria-label", "Options");
    options.forEach((text, i) => {
      const b = el("button", "", text);
      b.type = "button";
      b.addEventListener("click", () => answer({ answer: text, option_index: i }));
      buttons.push(b);
      row.append(b);
    });
    card.append(row);
  }
  card.append(label, input, send);
  requests.append(card);
  state.cards.set(q.callId, card);
}

function onResolved(r) {
  const id = r.planItemId || r.callId;
  const card = state.cards.get(id);
  if (!card) return;
  card.remove();
  state.cards.delete(id);
  const verdict =
    r.decision === "CLIENT_DECISION_ALLOW"
      ? "allowed"
      : r.decision === "CLIENT_DECISION_DENY"
        ? "denied"
        : "settled";
  const where = state.answered.has(id) ? "" : " elsewhere";
  addEntry(
    el(
      "p",
      "",
      `${card.querySelector("h3")?.textContent ?? "Request"} — ${verdict}${where} (${r.resolvedBy || "?"})`,
    ),
    "note",
  );
}

// ---- sessions and the sub-agent tree ----------------------------------------

function rememberSession(info) {
  const known = state.sessions.get(info.sessionId) ?? { children: new Set() };
  known.info = info;
  known.status = info.status;
  state.sessions.set(info.sessionId, known);
  if (info.parentSessionId) {
    const parent = state.sessions.get(info.parentSessionId) ?? {
      children: new Set(),
      info: { sessionId: info.parentSessionId },
    };
    parent.children.add(info.sessionId);
    state.sessions.set(info.parentSessionId, parent);
  }
}

function paintTree() {
  const roots = [...state.sessions.entries()].filter(([, s]) => !s.info?.parentSessionId);
  const item = (id, s) => {
    const li = el("li");
    const b = el("button");
    b.type = "button";
    b.dataset.session = id;
    b.append(
      document.createTextNode(s.info?.title || id.slice(0, 10)),
      document.createTextNode(" "),
      el("span", "st", `· ${statusText(s.status)}`),
    );
    if (id === state.sessionId) b.setAttribute("aria-current", "true");
    b.addEventListener("click", () => openSession(id));
    li.append(b);
    if (s.children.size > 0) {
      const ul = el("ul");
      ul.setAttribute("aria-label", "sub-agents");
      for (const c of s.children) ul.append(item(c, state.sessions.get(c) ?? { children: new Set() }));
      li.append(ul);
    }
    return li;
  };
  $("sessions").replaceChildren(...roots.map(([id, s]) => item(id, s)));
}

function onTreeUpdate(u) {
  rememberSession({
    ...(state.sessions.get(u.childSessionId)?.info ?? { sessionId: u.childSessionId }),
    sessionId: u.childSessionId,
    parentSessionId: u.parentSessionId,
    status: u.status,
  });
  paintTree();
}

function listSessions() {
  post({ listSessions: { requestId: nextId("list") } });
}

function clearView() {
  transcript.replaceChildren();
  widgets.replaceChildren();
  widgets.hidden = true;
  requests.replaceChildren();
  state.streams.clear();
  state.cards.clear();
  state.answered.clear();
}

function openSession(id) {
  if (!id) return;
  if (state.sessionId && state.sessionId !== id)
    post({ detachSession: { requestId: nextId("detach"), sessionId: state.sessionId } });
  clearView();
  state.sessionId = id;
  state.replayOnly = false;
  state.commands = null;
  history.replaceState(null, "", `#session=${id}`);
  const requestId = nextId("open");
  state.pendingOpen = requestId;
  post({ resumeSession: { requestId, sessionId: id } });
  paintTree();
}

function newSession() {
  if (state.sessionId) post({ detachSession: { requestId: nextId("detach"), sessionId: state.sessionId } });
  clearView();
  state.sessionId = "";
  state.replayOnly = false;
  history.replaceState(null, "", "#");
  setTitle(undefined);
  setStatus("");
  prompt.focus();
}

// ---- server events -----------------------------------------------------------

function onEvent(ev) {
  if (
    ev.sessionId &&
    state.sessionId &&
    ev.sessionId !== state.sessionId &&
    !ev.sessionTreeUpdate &&
    !ev.sessionList
  )
    return;
  if (ev.sessionCreated) {
    const info = ev.sessionCreated.info;
    state.commands = null;
    state.sessionId = info.sessionId;
    history.replaceState(null, "", `#session=${info.sessionId}`);
    rememberSession(info);
    setTitle(info);
    setStatus(info.status);
    paintTree();
  } else if (ev.sessionAttached) {
    const info = ev.sessionAttached.info;
    state.replayOnly = !!ev.sessionAttached.replayOnly;
    setCommands(ev.sessionAttached.slashCommandRegistry);
    rememberSession(info);
    setTitle(info);
    setStatus(info.status);
    paintTree();
  } else if (ev.slashCommandRegistry) {
    setCommands(ev.slashCommandRegistry);
  } else if (ev.sessionRewound) {
    // The session was rewound (/rewind, here or in another frontend): go on in the fork,
    // with the prompt it ends before back in the composer.
    const r = ev.sessionRewound;
    if (r.forkSessionId) {
      openSession(r.forkSessionId);
      prompt.value = r.promptText ?? "";
      showNotice(`Rewound: continuing in ${r.forkSessionId}.`);
    }
  } else if (ev.backfillComplete) {
    document.body.dataset.backfilled = state.sessionId;
  } else if (ev.render) {
    if (ev.render.content) onRender(ev.render.content);
  } else if (ev.streamDelta) {
    onDelta(ev.streamDelta);
  } else if (ev.permissionRequest) {
    if (ev.permissionRequest.planItem) {
      closeStreams(["text", "thinking"]);
      permissionCard(ev.permissionRequest.planItem, ev.permissionRequest.origin);
    }
  } else if (ev.interactiveRequest) {
    questionCard(ev.interactiveRequest);
  } else if (ev.requestResolved) {
    onResolved(ev.requestResolved);
  } else if (ev.planReady) {
    statusLine.textContent = "applying…";
  } else if (ev.sessionStatusUpdate) {
    const u = ev.sessionStatusUpdate;
    setStatus(u.status, u.detail);
    const known = state.sessions.get(state.sessionId);
    if (known) {
      known.status = u.status;
      paintTree();
    }
    // Titles, costs and new sessions show up in the list as they change.
    listSessions();
  } else if (ev.usageUpdate) {
    const u = ev.usageUpdate;
    $("cost").textContent = `$${Number(u.sessionCostUsd ?? 0).toFixed(4)}`;
  } else if (ev.sessionList) {
    for (const info of ev.sessionList.sessions ?? []) rememberSession(info);
    const current = state.sessions.get(state.sessionId)?.info;
    if (current?.title) setTitle(current);
    paintTree();
  } else if (ev.sessionTreeUpdate) {
    onTreeUpdate(ev.sessionTreeUpdate);
  } else if (ev.error) {
    const e = ev.error.error ?? {};
    // A session another process runs cannot be resumed here: show it read-only instead.
    if (ev.requestId === state.pendingOpen && e.category === "FRONTEND_ERROR_CATEGORY_SESSION_BUSY") {
      post({ attachSession: { requestId: nextId("attach"), sessionId: ev.sessionId } });
      return;
    }
    showError(e.message ?? "error");
  }
}

function connect() {
  const source = new EventSource("/events");
  source.addEventListener("hello", (e) => {
    state.connection = JSON.parse(e.data).connection;
    statusLine.textContent = "connected";
    listSessions();
    const wanted = new URLSearchParams(location.hash.slice(1)).get("session") || state.sessionId;
    if (wanted) openSession(wanted);
    else setStatus("");
  });
  source.onmessage = (e) => onEvent(JSON.parse(e.data));
  source.onerror = () => {
    state.connection = "";
    statusLine.textContent = "disconnected — reconnecting…";
  };
}

$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = prompt.value.trim();
  if (!text) return;
  // "/name args" runs a registered slash command; "//x" sends "/x" as text.
  const command = /^\/([^\s/]\S*)\s*([\s\S]*)$/.exec(text);
  if (command && state.sessionId) {
    const [, name, args] = command;
    // Without the registry (a session created here) the kernel answers an unknown one.
    if (state.commands && !state.commands.has(name)) {
      showError(
        `Unknown command /${name}; this session has ${[...state.commands].map((c) => `/${c}`).join(" ") || "none"}.`,
      );
      return;
    }
    post({ sessionId: state.sessionId, slashCommand: { name, args: args.trim() } });
    prompt.value = "";
    return;
  }
  const content = [{ text: { text: text.startsWith("//") ? text.slice(1) : text } }];
  if (state.sessionId) post({ sessionId: state.sessionId, userMessage: { content } });
  else post({ createSession: { requestId: nextId("create"), initialPrompt: content } });
  prompt.value = "";
});
prompt.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $("composer").requestSubmit();
  }
});
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && state.sessionId && state.status === "SESSION_STATUS_RUNNING") {
    post({ sessionId: state.sessionId, interrupt: {} });
  }
});
$("interrupt").addEventListener("click", () => post({ sessionId: state.sessionId, interrupt: {} }));
$("new-session").addEventListener("click", newSession);
$("refresh-sessions").addEventListener("click", listSessions);
// A memory record's [[reference]]: open the record with /memory show (sent by Enter).
document.addEventListener("click", (e) => {
  const a = e.target instanceof Element ? e.target.closest("a.memory-link") : null;
  if (!a) return;
  e.preventDefault();
  prompt.value = `/memory show ${a.dataset.memoryId}`;
  prompt.focus();
});

connect();
