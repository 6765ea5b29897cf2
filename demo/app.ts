/**
 * The playground's controller: it owns the state (the open session, this tab's run, the
 * older segments paged into the chat, who owns the session), performs every action
 * through the core's public API, and re-renders the views.
 */
import { CancelledError, ContextOverflowError, CorruptSessionError, ProviderError, RevisionConflictError, SessionBusyError, SessionfoldError, WriterLockedError, formatLocation, type AgentConfig, type CompactionOutcome, type Diagnostic, type LockOwner, type MessagePart, type MessageRecord, type Provider, type RunEvent, type SegmentRange, type Session, type SessionMeta, type SessionOptions, type SummaryRecord, type Usage } from "../core/mod.ts";
import { openBrowserSessions, type BrowserSessions } from "../runtime-browser/mod.ts";
import { AGENT_ID, DEFAULT_AGENT_TEXT, WORKSPACE_ID, checkSettings, loadSettingsText, saveSettingsText, type CheckedSettings } from "./agent-settings.ts";
import { byId, formatBytes, formatNumber, h, relativeTime, replaceChildren } from "./dom.ts";
import { LocalModel } from "./local-model.ts";
import type { OpenAiCompatibleProvider } from "./openai-provider.ts";
import { download, prepareDownload, readImportFile, type ExportFormat } from "./portable-io.ts";
import { demoTools } from "./tools.ts";
import { renderMessage } from "./views/messages.ts";
import { gaugeFacts, renderGauge, renderHistory } from "./views/panel.ts";
import { banner, confirmDelete, welcome } from "./views/chrome.ts";
import { bindModelPanel } from "./views/model-panel.ts";
import { bindSettingsDialog } from "./views/settings-dialog.ts";
import { bindTheme } from "./views/theme.ts";
import { toast } from "./views/toast.ts";
import { generateSystem, newId } from "../core/internal.ts";

/** A message of this tab's run that is not committed yet. */
interface LiveMessage {
  role: "user" | "assistant";
  parts: MessagePart[];
  usage?: Usage;
  provider?: MessageRecord["provider"];
}

/** This tab's running turn. */
interface LiveRun {
  readonly controller: AbortController;
  readonly messages: LiveMessage[];
  usage?: Usage;
  compacting?: string;
}

/** An older segment paged into the chat. */
interface LoadedSegment {
  readonly range: SegmentRange;
  readonly messages: MessageRecord[];
  readonly footer?: SummaryRecord;
}

/** A dismissable notice above the conversation. */
interface Notice {
  readonly id: string;
  readonly kind: "info" | "warn" | "error";
  readonly title: string;
  readonly body?: string;
  readonly items?: readonly string[];
}

const QUERY = new URLSearchParams(location.search);
const DB_NAME = QUERY.get("db") ?? "sessionfold-playground";
const SPEEDS = { relaxed: 60, normal: 28, fast: 8, instant: 1 } as const;

/** Starts the playground in this page. */
export async function startApp(): Promise<void> {
  const browser = await openBrowserSessions({ dbName: DB_NAME });
  const text = await loadSettingsText(browser.storage);
  const app = new App(browser, text);
  await app.start();
  byId("app").setAttribute("aria-busy", "false");
  (window as unknown as { playground: App }).playground = app;
}

class App {
  readonly browser: BrowserSessions;
  settingsText: string;
  config!: AgentConfig;
  options!: SessionOptions;

  session: Session | undefined;
  archived = false;
  older: LoadedSegment[] = [];
  run: LiveRun | undefined;
  /** A mutating operation of this tab other than a run (compact, fork, …). */
  busy: string | undefined;
  /** Another tab holds this session's writer lock. */
  remoteOwner: LockOwner | undefined;
  notices: Notice[] = [];
  /** The session handle whose recovery findings the user dismissed (they show again on the next open). */
  diagnosticsSeen: Session | undefined;
  metas: SessionMeta[] = [];
  archivedMetas: SessionMeta[] = [];

  providerKind: "local" | "openai" = "local";
  openai: OpenAiCompatibleProvider | undefined;
  chunkDelayMs: number;
  readonly localModel: LocalModel;

  #liveFrame = 0;
  #listTimer: ReturnType<typeof setTimeout> | undefined;
  #pollBusy = false;

  constructor(browser: BrowserSessions, settingsText: string) {
    this.browser = browser;
    this.settingsText = settingsText;
    const delay = Number(QUERY.get("delay"));
    this.chunkDelayMs = Number.isFinite(delay) && QUERY.has("delay") ? Math.max(0, delay) : SPEEDS.normal;
    this.localModel = new LocalModel({ contextWindow: () => this.config.context_window ?? 2000, chunkDelayMs: () => this.chunkDelayMs });
    this.applySettings(checkSettings(settingsText), true);
  }

  get provider(): Provider {
    return this.providerKind === "openai" && this.openai ? this.openai : this.localModel;
  }

  get sessions() {
    return this.browser.sessions;
  }

  /** Uses a checked agent file; an invalid stored one falls back to the defaults with a notice. */
  applySettings(checked: CheckedSettings, initial = false): void {
    if (checked.ok) {
      this.config = checked.config;
      this.options = checked.options;
      return;
    }
    const fallback = checkSettings(DEFAULT_AGENT_TEXT);
    if (!fallback.ok) throw new Error("the default agent settings are invalid");
    this.config = fallback.config;
    this.options = fallback.options;
    if (initial) this.notify({ id: "settings", kind: "error", title: "The stored agent settings are not valid; the defaults are used until you fix them.", body: checked.summary });
  }

  async start(): Promise<void> {
    this.bindStatic();
    this.browser.onCommit((event) => void this.onRemoteCommit(event.ref, event.revision));
    setInterval(() => void this.pollOwnership(), 1000);
    window.addEventListener("hashchange", () => void this.openFromHash());
    await this.refreshList();
    await this.openFromHash(true);
  }

  // ————————————————————————————————————————— wiring

  bindStatic(): void {
    const input = byId<HTMLTextAreaElement>("message-input");
    byId("composer").addEventListener("submit", (event) => {
      event.preventDefault();
      void this.send(input.value);
    });
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        void this.send(input.value);
      }
    });
    input.addEventListener("input", () => this.autosize());
    byId("stop").addEventListener("click", () => this.run?.controller.abort());
    byId("new-session").addEventListener("click", () => this.newSession());
    byId("compact-now").addEventListener("click", () => void this.compactNow());
    byId("fork").addEventListener("click", () => void this.fork());
    byId("archive").addEventListener("click", () => void this.archive());
    byId("delete").addEventListener("click", () => void this.remove());
    byId("export").addEventListener("click", () => this.openExport());
    const file = byId<HTMLInputElement>("import-file");
    byId("import-button").addEventListener("click", () => file.click());
    file.addEventListener("change", () => {
      const picked = file.files?.[0];
      file.value = "";
      if (picked) void this.importFile(picked);
    });
    bindSettingsDialog({
      current: () => this.settingsText,
      save: async (text) => {
        const checked = checkSettings(text);
        if (!checked.ok) return checked;
        await this.guard("save settings", async () => {
          await saveSettingsText(this.browser.storage, text);
          this.settingsText = text;
          this.applySettings(checked);
          if (this.session) await this.reopen();
          toast("Agent settings saved. They apply to every session from now on.");
        });
        return checked;
      },
    });
    this.bindExportDialog();
    this.bindTabs();
    bindTheme();
    bindModelPanel(byId("model-panel"), {
      speeds: SPEEDS,
      chunkDelayMs: () => this.chunkDelayMs,
      setChunkDelayMs: (ms) => (this.chunkDelayMs = ms),
      useEndpoint: (provider) => {
        this.openai = provider;
        this.providerKind = "openai";
        this.renderComposer();
        this.renderPanel();
      },
      useLocal: () => {
        this.providerKind = "local";
        this.renderComposer();
        this.renderPanel();
      },
    });
  }

  bindTabs(): void {
    const tabs = [byId("tab-history"), byId("tab-model")];
    const select = (tab: HTMLElement) => {
      for (const t of tabs) {
        const selected = t === tab;
        t.setAttribute("aria-selected", String(selected));
        t.tabIndex = selected ? 0 : -1;
        byId(t.getAttribute("aria-controls")!).hidden = !selected;
      }
    };
    for (const tab of tabs) {
      tab.addEventListener("click", () => select(tab));
      tab.addEventListener("keydown", (event) => {
        if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
        const next = tabs[(tabs.indexOf(tab) + (event.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length]!;
        select(next);
        next.focus();
      });
    }
  }

  // ————————————————————————————————————————— sessions

  ref(sessionId: string): string {
    return `${AGENT_ID}/${WORKSPACE_ID}/${sessionId}`;
  }

  async refreshList(): Promise<void> {
    const problems: string[] = [];
    const onProblem = (p: { ref: string; message: string }) => problems.push(`${p.ref}: ${p.message}`);
    this.metas = await this.sessions.list({ agentId: AGENT_ID, workspaceId: WORKSPACE_ID, onProblem });
    this.archivedMetas = await this.sessions.list({ agentId: AGENT_ID, workspaceId: WORKSPACE_ID, archived: true, onProblem });
    if (problems.length > 0) this.notify({ id: "list", kind: "warn", title: "Some sessions could not be listed.", items: problems });
    this.renderList();
  }

  scheduleListRefresh(): void {
    clearTimeout(this.#listTimer);
    this.#listTimer = setTimeout(() => void this.refreshList().catch(() => undefined), 150);
  }

  async openFromHash(initial = false): Promise<void> {
    const match = /^#\/(archived\/)?([A-Za-z0-9_.-]+)$/.exec(location.hash);
    if (match) {
      const archived = match[1] !== undefined;
      if (this.session && this.session.ref.sessionId === match[2] && this.archived === archived) return;
      await this.openSession(match[2]!, archived);
      return;
    }
    if (initial && this.metas[0]) await this.openSession(this.metas[0].session_id, false);
    else this.newSession();
  }

  async openSession(sessionId: string, archived: boolean): Promise<void> {
    if (this.run || this.busy) return;
    try {
      this.session = await withSegments(await this.sessions.open(this.ref(sessionId), { ...this.options, archived }));
      this.archived = archived;
    } catch (error) {
      this.session = undefined;
      this.notify({ id: "open", kind: "error", title: `Could not open ${sessionId}.`, body: describe(error) });
      history.replaceState(null, "", location.pathname + location.search);
      this.renderAll();
      return;
    }
    this.older = [];
    this.remoteOwner = undefined;
    // Notices about the previous session go with it.
    this.notices = this.notices.filter((n) => n.id === "settings" || n.id === "list");
    this.setHash();
    this.renderAll();
    this.scrollToBottom();
    await this.pollOwnership();
  }

  /** Re-opens the current session with the current settings. */
  async reopen(): Promise<void> {
    if (!this.session) return;
    this.session = await withSegments(await this.sessions.open(this.session.ref, { ...this.options, archived: this.archived }));
    this.renderAll();
  }

  setHash(): void {
    const hash = this.session ? `#/${this.archived ? "archived/" : ""}${this.session.ref.sessionId}` : "";
    if (location.hash !== hash) history.replaceState(null, "", `${location.pathname}${location.search}${hash}`);
  }

  newSession(): void {
    if (this.run) return;
    this.session = undefined;
    this.archived = false;
    this.older = [];
    this.remoteOwner = undefined;
    this.notices = this.notices.filter((n) => n.id === "settings");
    this.setHash();
    this.renderAll();
    byId("message-input").focus();
  }

  // ————————————————————————————————————————— the turn

  async send(raw: string): Promise<void> {
    const text = raw.trim();
    if (text === "" || this.run || this.busy || this.archived) return;
    const input = byId<HTMLTextAreaElement>("message-input");
    if (!this.session) {
      try {
        const title = text.replace(/\s+/g, " ").slice(0, 60);
        const session = await this.sessions.create(
          { agentId: AGENT_ID, workspaceId: WORKSPACE_ID, sessionId: newId("s"), title, ...(this.config.model_label ? { modelLabel: this.config.model_label } : {}), timezone: Intl.DateTimeFormat().resolvedOptions().timeZone },
          this.options,
        );
        this.session = session;
        this.archived = false;
        this.setHash();
        await this.refreshList();
      } catch (error) {
        this.notify({ id: "send", kind: "error", title: "Could not create the session.", body: describe(error) });
        this.renderBanners();
        return;
      }
    }
    const session = this.session;
    const controller = new AbortController();
    const run: LiveRun = { controller, messages: [{ role: "user", parts: [{ sequence: 1, type: "text", text }] }] };
    this.run = run;
    input.value = "";
    this.autosize();
    this.dismiss("send");
    this.dismiss("locked");
    this.renderAll();
    this.scrollToBottom();
    let restore = false;
    try {
      const handle = session.run(text, { provider: this.provider, tools: demoTools, signal: controller.signal, onEvent: (event) => this.onRunEvent(run, event) });
      await handle.result;
    } catch (error) {
      restore = this.reportRunError(error);
    } finally {
      this.run = undefined;
      cancelAnimationFrame(this.#liveFrame);
      if (restore && input.value === "") {
        input.value = text;
        this.autosize();
      }
      this.renderAll();
      this.scrollToBottom();
      this.scheduleListRefresh();
    }
  }

  /** Shows what a failed run means; `true` when the text should go back into the box. */
  reportRunError(error: unknown): boolean {
    if (error instanceof CancelledError) {
      toast(`Stopped. The partial reply is kept as “stopped” (revision ${error.revision ?? "?"}).`);
      return false;
    }
    if (error instanceof WriterLockedError) {
      this.remoteOwner = error.owner ?? this.remoteOwner;
      this.notify({
        id: "locked",
        kind: "warn",
        title: `Not sent: ${ownerName(error.owner)} is writing this session (WriterLockedError).`,
        body: "Nothing was written. This tab follows that tab's commits; send again when it has finished. Your message is still in the box.",
      });
      return true;
    }
    if (error instanceof RevisionConflictError) {
      this.notify({ id: "send", kind: "warn", title: "Another tab committed to this session first (RevisionConflictError).", body: "This view was reloaded; nothing of your message was written. Send it again." });
      if (this.session) void withSegments(this.session, true).then(() => this.renderAll());
      return true;
    }
    if (error instanceof SessionBusyError) {
      this.notify({ id: "send", kind: "warn", title: "This session is busy in this tab.", body: error.message });
      return true;
    }
    if (error instanceof ProviderError || error instanceof ContextOverflowError) {
      this.notify({ id: "send", kind: "error", title: "The model failed; nothing of this turn was committed.", body: error.message });
      return true;
    }
    if (error instanceof CorruptSessionError) {
      this.notify({ id: "send", kind: "error", title: "This session is read-only until it is repaired.", body: error.message });
      return true;
    }
    this.notify({ id: "send", kind: "error", title: "The turn failed.", body: describe(error) });
    return true;
  }

  onRunEvent(run: LiveRun, event: RunEvent): void {
    const assistant = () => {
      let last = run.messages.at(-1);
      if (!last || last.role !== "assistant") {
        last = { role: "assistant", parts: [], provider: { ...this.provider.identity } };
        run.messages.push(last);
      }
      return last;
    };
    const appendText = (type: "text" | "reasoning", text: string) => {
      const message = assistant();
      const last = message.parts.at(-1);
      if (last && last.type === type) message.parts[message.parts.length - 1] = { ...last, text: last.text + text };
      else message.parts.push({ sequence: message.parts.length + 1, type, text });
    };
    switch (event.type) {
      case "step-started":
        run.messages.push({ role: "assistant", parts: [], provider: { ...this.provider.identity } });
        break;
      case "text-delta":
      case "reasoning-delta":
        appendText(event.type === "text-delta" ? "text" : "reasoning", event.text);
        break;
      case "reasoning-summary":
        assistant().parts.push({ sequence: assistant().parts.length + 1, type: "reasoning-summary", text: event.text });
        break;
      case "tool-call":
        assistant().parts.push({ sequence: assistant().parts.length + 1, type: "tool", tool_call_id: event.toolCallId, tool_name: event.toolName, state: "input-available", input: event.input });
        break;
      case "tool-result":
      case "tool-error": {
        const message = assistant();
        message.parts = message.parts.map((p) =>
          p.type === "tool" && p.tool_call_id === event.toolCallId
            ? event.type === "tool-result"
              ? { ...p, state: "output-available", output: event.output }
              : { ...p, state: "output-error", error: event.error }
            : p,
        );
        break;
      }
      case "usage":
        assistant().usage = event.usage;
        run.usage = event.usage;
        this.renderPanel();
        break;
      case "compaction-started":
        run.compacting = event.reason;
        run.usage = undefined;
        this.renderPanel();
        break;
      case "compaction-completed":
        run.compacting = undefined;
        this.onCompacted(event.outcome, true);
        return;
      case "compaction-failed":
        run.compacting = undefined;
        toast(`Compaction failed, nothing changed: ${event.message}`, "error");
        this.renderPanel();
        return;
      case "context-folded":
        toast(`The model refused the input as too long; it was folded in memory (depth ${event.depth}, ${event.droppedMessages} messages left out of this request).`, "warn");
        return;
      case "committed":
        // A recovered draft committed first (its own commit) or the turn's final commit.
        this.renderMessages();
        this.renderPanel();
        this.renderHeader();
        return;
      default:
        break;
    }
    this.scheduleLiveRender();
  }

  onCompacted(outcome: CompactionOutcome, automatic: boolean): void {
    toast(
      `${automatic ? "Compacted automatically" : "Compacted"}: messages #${outcome.segment.start}–#${outcome.segment.end} are now a segment; ≈${formatNumber(outcome.beforeTokens)} → ≈${formatNumber(outcome.afterTokens)} tokens.`,
    );
    this.renderMessages();
    this.renderPanel();
    this.renderHeader();
    this.scheduleListRefresh();
  }

  scheduleLiveRender(): void {
    if (this.#liveFrame) return;
    this.#liveFrame = requestAnimationFrame(() => {
      this.#liveFrame = 0;
      this.renderLive();
    });
  }

  // ————————————————————————————————————————— session actions

  /** Runs a mutating action of this tab with its errors shown. */
  async guard<T>(what: string, fn: () => Promise<T>): Promise<T | undefined> {
    if (this.busy || this.run) return undefined;
    this.busy = what;
    this.renderHeader();
    try {
      return await fn();
    } catch (error) {
      if (error instanceof WriterLockedError) {
        this.notify({ id: "locked", kind: "warn", title: `Could not ${what}: ${ownerName(error.owner)} is writing this session (WriterLockedError).`, body: "Nothing was changed. Try again when it has finished." });
      } else if (error instanceof RevisionConflictError) {
        if (this.session) await withSegments(this.session, true).catch(() => undefined);
        this.notify({ id: "action", kind: "warn", title: `Could not ${what}: another tab changed this session first.`, body: "This view was reloaded; try again." });
      } else {
        this.notify({ id: "action", kind: "error", title: `Could not ${what}.`, body: describe(error) });
      }
      return undefined;
    } finally {
      this.busy = undefined;
      this.renderAll();
    }
  }

  async compactNow(): Promise<void> {
    const session = this.session;
    if (!session) return;
    await this.guard("compact", async () => {
      const outcome = await session.compact();
      if (outcome.segment === null) toast("Nothing to compact: the Active window holds fewer than 2 messages.");
      else this.onCompacted(outcome as CompactionOutcome, false);
    });
  }

  async finishDraft(): Promise<void> {
    const session = this.session;
    if (!session) return;
    await this.guard("finish the draft", async () => {
      const result = await session.finishDraft();
      toast(result ? `The interrupted reply was committed as “stopped” (revision ${result.revision}).` : "There was no draft to finish.");
      this.scheduleListRefresh();
    });
  }

  async fork(): Promise<void> {
    const session = this.session;
    if (!session || this.archived) return;
    const forked = await this.guard("fork", async () => {
      const id = newId("s");
      await this.sessions.fork(session.ref, id);
      return id;
    });
    if (!forked) return;
    await this.refreshList();
    await this.openSession(forked, false);
    toast("Forked: this copy has the whole history and grows on its own.");
  }

  async archive(): Promise<void> {
    const session = this.session;
    if (!session || this.archived) return;
    const done = await this.guard("archive", async () => {
      await this.sessions.archive(session.ref);
      return true;
    });
    if (!done) return;
    toast("Archived. It is read-only now; find it under Archived.");
    await this.refreshList();
    await this.openSession(session.ref.sessionId, true);
  }

  async remove(): Promise<void> {
    const session = this.session;
    if (!session) return;
    const title = session.meta.title ?? session.ref.sessionId;
    if (!(await confirmDelete(`Delete “${title}” and its whole history? This cannot be undone.`))) return;
    const archived = this.archived;
    const done = await this.guard("delete", async () => {
      await this.sessions.delete(session.ref, { archived });
      return true;
    });
    if (!done) return;
    toast(`Deleted “${title}”.`);
    this.session = undefined;
    await this.refreshList();
    if (this.metas[0]) await this.openSession(this.metas[0].session_id, false);
    else this.newSession();
  }

  async importFile(file: File): Promise<void> {
    const bytes = new Uint8Array(await file.arrayBuffer());
    const imported = await this.guard("import the file", async () => {
      const read = await readImportFile(file.name, bytes);
      const id = newId("s");
      const portable = read.session.title ? read.session : { ...read.session, title: file.name };
      await this.sessions.importPortable(this.ref(id), portable);
      return { id, read };
    });
    if (!imported) return;
    await this.refreshList();
    await this.openSession(imported.id, false);
    const { read } = imported;
    toast(`Imported ${read.session.messages.length} messages from a ${read.format} file.`);
    if (read.diagnostics.length > 0) {
      this.notify({
        id: "import",
        kind: "warn",
        title: `The ${read.format} file was imported with ${read.diagnostics.length} finding${read.diagnostics.length === 1 ? "" : "s"}.`,
        items: read.diagnostics.map((d) => `${d.code} — ${d.file}${d.line === null ? "" : `:${d.line}`}: ${d.message}`),
      });
      this.renderBanners();
    }
  }

  openExport(): void {
    if (!this.session) return;
    byId("export-report").replaceChildren();
    byId<HTMLDialogElement>("export-dialog").showModal();
  }

  bindExportDialog(): void {
    const dialog = byId<HTMLDialogElement>("export-dialog");
    byId("export-cancel").addEventListener("click", () => dialog.close());
    byId("export-download").addEventListener("click", () => {
      const session = this.session;
      if (!session) return;
      const format = (dialog.querySelector<HTMLInputElement>("input[name=export-format]:checked")?.value ?? "deepcode") as ExportFormat;
      const redact = byId<HTMLInputElement>("export-redact").checked;
      const dropSystemPrompt = byId<HTMLInputElement>("export-drop-system").checked;
      void (async () => {
        try {
          const portable = await session.exportPortable();
          const prepared = prepareDownload(portable, { format, redact, dropSystemPrompt });
          download(prepared);
          const { report } = prepared;
          const masked = redact ? `${report.redactions} secret${report.redactions === 1 ? "" : "s"} redacted` : "not redacted";
          toast(`Exported ${portable.messages.length} messages as ${prepared.fileName} (${masked}).`);
          dialog.close();
        } catch (error) {
          replaceChildren(byId("export-report"), h("p", { class: "error" }, describe(error)));
        }
      })();
    });
  }

  // ————————————————————————————————————————— other tabs

  async onRemoteCommit(ref: string, revision: number): Promise<void> {
    this.scheduleListRefresh();
    const session = this.session;
    if (!session || this.run || this.busy || this.archived) return;
    if (ref !== this.ref(session.ref.sessionId) || revision <= session.revision) return;
    await withSegments(session, true).catch(() => undefined);
    this.renderAll();
    this.scrollToBottom();
  }

  /** Whether another tab holds the session's writer lock; while it does, follow its draft. */
  async pollOwnership(): Promise<void> {
    const session = this.session;
    if (!session || this.run || this.busy || this.archived || this.#pollBusy || document.visibilityState !== "visible") return;
    this.#pollBusy = true;
    try {
      const owner = await this.browser.heldBy(session);
      if (this.run || this.busy || session !== this.session) return;
      if (owner) {
        this.remoteOwner = owner;
        await withSegments(session, true);
        this.renderAll();
        this.scrollToBottom();
      } else if (this.remoteOwner) {
        this.remoteOwner = undefined;
        this.dismiss("locked");
        await withSegments(session, true);
        this.renderAll();
        this.scrollToBottom();
      }
    } catch {
      // Polling is best effort; the next tick tries again.
    } finally {
      this.#pollBusy = false;
    }
  }

  // ————————————————————————————————————————— notices

  notify(notice: Notice): void {
    this.notices = [...this.notices.filter((n) => n.id !== notice.id), notice];
    this.renderBanners();
  }

  dismiss(id: string): void {
    const before = this.notices.length;
    this.notices = this.notices.filter((n) => n.id !== id);
    if (this.notices.length !== before) this.renderBanners();
  }

  // ————————————————————————————————————————— rendering

  renderAll(): void {
    this.renderList();
    this.renderHeader();
    this.renderBanners();
    this.renderMessages();
    this.renderPanel();
    this.renderComposer();
  }

  renderList(): void {
    const item = (meta: SessionMeta, archived: boolean) => {
      const current = this.session?.ref.sessionId === meta.session_id && this.archived === archived;
      const tags: HTMLElement[] = [];
      if (meta.forked_from) tags.push(h("span", { class: "tag" }, "fork"));
      if ((meta as { imported_from?: unknown }).imported_from) tags.push(h("span", { class: "tag" }, "imported"));
      if ((meta.compaction?.completed ?? 0) > 0) tags.push(h("span", { class: "tag tag-segment" }, `${meta.compaction!.completed}× compacted`));
      const button = h(
        "button",
        {
          type: "button",
          class: "session-item",
          "aria-current": current ? "page" : null,
          disabled: this.run !== undefined || this.busy !== undefined,
          onclick: () => void this.openSession(meta.session_id, archived),
        },
        h("span", { class: "session-item-title" }, meta.title || meta.session_id),
        h("span", { class: "session-item-meta" }, `${meta.message_count} message${meta.message_count === 1 ? "" : "s"} · ${relativeTime(meta.updated_at)}`, ...tags),
      );
      return h("li", {}, button);
    };
    const list = byId("session-list");
    if (this.metas.length === 0) replaceChildren(list, h("li", { class: "muted small empty" }, "No sessions yet."));
    else replaceChildren(list, ...this.metas.map((m) => item(m, false)));
    replaceChildren(byId("archived-list"), ...this.archivedMetas.map((m) => item(m, true)));
    byId("archived-count").textContent = this.archivedMetas.length > 0 ? String(this.archivedMetas.length) : "";
    byId("archived").hidden = this.archivedMetas.length === 0;
    if (this.archived) (byId("archived") as HTMLDetailsElement).open = true;
  }

  renderHeader(): void {
    const session = this.session;
    const title = byId("session-title");
    const meta = byId("session-meta");
    if (!session) {
      title.textContent = "New session";
      meta.textContent = "Your first message creates it.";
      meta.removeAttribute("title");
    } else {
      const m = session.meta;
      title.textContent = m.title || m.session_id;
      const facts = [
        `revision ${m.revision}`,
        `${formatNumber(m.message_count)} message${m.message_count === 1 ? "" : "s"}`,
        `${(session.listedSegments ?? []).length} segment${(session.listedSegments ?? []).length === 1 ? "" : "s"}`,
        formatBytes(m.history_bytes),
      ];
      if (this.archived) facts.unshift("archived · read-only");
      if (m.forked_from) facts.push(`forked from ${m.forked_from.session_id.slice(0, 10)}… at #${m.forked_from.through_sequence}`);
      const importedFrom = (m as { imported_from?: { format?: string } }).imported_from;
      if (importedFrom?.format) facts.push(`imported from ${importedFrom.format}`);
      meta.title = `${AGENT_ID}/${WORKSPACE_ID}/${m.session_id}`;
      meta.textContent = facts.join(" · ");
    }
    const idle = !this.run && !this.busy;
    const has = session !== undefined;
    const set = (id: string, enabled: boolean) => ((byId<HTMLButtonElement>(id)).disabled = !enabled);
    set("compact-now", has && idle && !this.archived && !this.remoteOwner);
    set("fork", has && idle && !this.archived);
    set("export", has && idle);
    set("archive", has && idle && !this.archived && !this.remoteOwner);
    set("delete", has && idle && !this.remoteOwner);
    set("new-session", !this.run);
    set("import-button", idle);
  }

  renderBanners(): void {
    const root = byId("banners");
    const banners: HTMLElement[] = [];
    const session = this.session;
    if (session && this.remoteOwner && !this.run) {
      banners.push(
        banner("info", `${ownerName(this.remoteOwner)} owns this session right now (${this.remoteOwner.operation}).`, {
          body: "Its writer lock is held by that tab's storage worker, so writes from here get a WriterLockedError. This tab follows its commits as they happen.",
          testId: "owner-banner",
        }),
      );
    } else if (session?.draft && !this.run && !this.archived) {
      const draft = session.draft;
      const chars = draft.record.parts.reduce((n, p) => n + ("text" in p && typeof p.text === "string" ? p.text.length : 0), 0);
      banners.push(
        banner("warn", "An interrupted reply was recovered.", {
          body: `${formatNumber(chars)} characters had streamed${draft.pending.length > 0 ? `, with ${draft.pending.length} message${draft.pending.length === 1 ? "" : "s"} of the same turn` : ""} when the tab went away (started ${new Date(draft.record.created_at).toLocaleTimeString()}). Finish it as “stopped” to commit it, or just send a new message.`,
          action: h("button", { type: "button", class: "button button-primary", onclick: () => void this.finishDraft() }, "Finish as stopped"),
          testId: "draft-banner",
        }),
      );
    }
    if (session && session.diagnostics.length > 0 && (this.diagnosticsSeen !== session || session.diagnostics.some((d) => d.fatal))) {
      const fatal = session.diagnostics.some((d) => d.fatal);
      banners.push(
        banner(fatal ? "error" : "info", fatal ? "Recovery found corruption: this session is read-only." : `Recovery made ${session.diagnostics.length} finding${session.diagnostics.length === 1 ? "" : "s"} when this session was opened.`, {
          items: session.diagnostics.map(describeDiagnostic),
          testId: "diagnostics-banner",
          dismiss: () => {
            this.diagnosticsSeen = session;
            this.renderBanners();
          },
        }),
      );
    }
    if (this.archived) banners.push(banner("info", "This session is archived and read-only.", { body: "You can read, export, fork or delete it." }));
    for (const notice of this.notices) {
      banners.push(
        banner(notice.kind, notice.title, {
          ...(notice.body !== undefined ? { body: notice.body } : {}),
          ...(notice.items ? { items: notice.items } : {}),
          dismiss: () => this.dismiss(notice.id),
          testId: `notice-${notice.id}`,
        }),
      );
    }
    replaceChildren(root, ...banners);
  }

  renderMessages(): void {
    const root = byId("messages");
    const atBottom = isAtBottom(root);
    const session = this.session;
    const nodes: HTMLElement[] = [];
    if (!session || (session.meta.message_count === 0 && !session.draft && !this.run)) {
      if (!this.run) nodes.push(welcome((text) => void this.send(text), this.run === undefined && !this.archived));
    } else {
      // Paged-in segments must reach the Active window; a compaction since then closed a newer
      // segment in between, so start paging again rather than show a gap.
      const newest = session.newestSegment;
      if (this.older.length > 0 && this.older.at(-1)!.range.end !== newest?.end) this.older = [];
      const loadedFrom = this.older[0]?.range.start ?? session.active[0]?.sequence ?? (session.newestSegment?.end ?? 0) + 1;
      const unloaded = (session.listedSegments ?? []).filter((s) => s.end < loadedFrom);
      if (unloaded.length > 0) {
        const first = unloaded[0]!.start;
        const last = unloaded.at(-1)!.end;
        nodes.push(
          h(
            "div",
            { class: "history-divider history-more" },
            h("span", {}, `${formatNumber(last - first + 1)} earlier message${last === first ? "" : "s"} in ${unloaded.length} segment${unloaded.length === 1 ? "" : "s"} (#${first}–#${last})`),
            h("button", { type: "button", class: "button button-small", onclick: () => void this.loadEarlier() }, "Load earlier messages"),
          ),
        );
      }
      for (const segment of this.older) {
        nodes.push(h("div", { class: "history-divider" }, h("span", {}, `Segment #${segment.range.start}–#${segment.range.end} · compacted`)));
        for (const message of segment.messages) nodes.push(renderMessage(message, { state: "committed" }));
      }
      if ((session.listedSegments ?? []).length > 0 && session.active.length > 0) {
        nodes.push(
          h(
            "div",
            { class: "history-divider history-active-divider" },
            h("span", {}, `Active window from #${session.active[0]!.sequence} — the model sees the summary of everything above, not the messages`),
          ),
        );
      }
      for (const message of session.active) nodes.push(renderMessage(message));
      const draft = session.draft;
      if (draft && !this.run) {
        const note = this.remoteOwner ? `streaming in ${ownerName(this.remoteOwner)}` : "interrupted · draft";
        for (const pending of draft.pending) nodes.push(renderMessage(pending, { state: "pending", note: "not committed yet" }));
        nodes.push(renderMessage(draft.record, { state: "draft", note }));
      }
    }
    const live = h("div", { class: "live", id: "live" });
    nodes.push(live);
    replaceChildren(root, ...nodes);
    this.renderLive();
    if (atBottom) this.scrollToBottom();
  }

  renderLive(): void {
    const root = document.getElementById("live");
    if (!root) return;
    const container = byId("messages");
    const atBottom = isAtBottom(container);
    const run = this.run;
    if (!run) {
      root.replaceChildren();
      return;
    }
    replaceChildren(
      root,
      ...run.messages.map((m, i) =>
        renderMessage(
          { role: m.role, parts: m.parts, ...(m.usage ? { usage: m.usage } : {}), ...(m.provider ? { provider: m.provider } : {}) },
          { state: m.role === "user" ? "pending" : "streaming", ...(i === run.messages.length - 1 && m.role === "assistant" ? { note: "streaming" } : {}) },
        ),
      ),
      run.compacting ? h("div", { class: "history-divider history-compacting" }, h("span", { class: "spinner", "aria-hidden": "true" }), h("span", {}, `Compacting before the next step: ${run.compacting}`)) : null,
    );
    if (atBottom) this.scrollToBottom();
  }

  async loadEarlier(): Promise<void> {
    const session = this.session;
    if (!session) return;
    const before = this.older[0]?.range.start ?? session.active[0]?.sequence ?? (session.newestSegment?.end ?? 0) + 1;
    const range = (session.listedSegments ?? []).findLast((s) => s.end < before);
    if (!range) return;
    const root = byId("messages");
    const height = root.scrollHeight;
    try {
      // One segment per page: exactly what `messages({ beforeSequence })` reads.
      const messages = await session.messages({ beforeSequence: before });
      this.older = [{ range, messages }, ...this.older];
    } catch (error) {
      this.notify({ id: "page", kind: "error", title: "Could not load earlier messages.", body: describe(error) });
      return;
    }
    this.renderMessages();
    root.scrollTop += root.scrollHeight - height;
  }

  renderPanel(): void {
    const session = this.session;
    renderGauge(
      byId("gauge"),
      gaugeFacts(session, {
        window: this.config.context_window ?? 2000,
        identity: this.provider.identity,
        tools: demoTools,
        system: generateSystem(this.options.agent),
        ...(this.run?.usage ? { liveUsage: this.run.usage } : {}),
        ...(this.run?.compacting ? { compacting: this.run.compacting } : {}),
      }),
    );
    renderHistory(byId("history"), session, { diagnostics: session?.diagnostics ?? [], ...(this.remoteOwner ? { draftOwner: ownerName(this.remoteOwner) } : {}) });
  }

  renderComposer(): void {
    const running = this.run !== undefined;
    const input = byId<HTMLTextAreaElement>("message-input");
    input.disabled = this.archived;
    input.placeholder = this.archived ? "Archived sessions are read-only." : "Message the agent… (Enter to send, Shift+Enter for a new line)";
    byId<HTMLButtonElement>("send").disabled = running || this.busy !== undefined || this.archived;
    byId("stop").hidden = !running;
    byId("app").dataset["running"] = String(running);
    const provider = this.provider;
    byId("composer-model").textContent = provider === this.localModel ? "Built-in local model · offline" : `${provider.identity.model} · ${this.openai?.origin ?? ""}`;
  }

  autosize(): void {
    const input = byId<HTMLTextAreaElement>("message-input");
    input.style.setProperty("height", "auto");
    input.style.setProperty("height", `${Math.min(200, input.scrollHeight + 2)}px`);
  }

  scrollToBottom(): void {
    const root = byId("messages");
    root.scrollTop = root.scrollHeight;
  }
}

// ————————————————————————————————————————— helpers

function describeDiagnostic(d: Diagnostic): string {
  const where = formatLocation(d);
  const message = d.message.startsWith(where) ? d.message : `${where}: ${d.message}`;
  return `${d.code} — ${message}${d.fatal ? " (blocks writes)" : ""}`;
}

function ownerName(owner: LockOwner | undefined): string {
  if (!owner || !owner.hostname) return "Another tab";
  return owner.runtime === "browser" ? `Tab ${owner.hostname}` : `${owner.hostname} (${owner.runtime}, pid ${owner.pid})`;
}

function describe(error: unknown): string {
  if (error instanceof SessionfoldError) return `${error.message} [${error.code}]`;
  if (error instanceof Error) return error.message;
  return String(error);
}

function isAtBottom(element: HTMLElement): boolean {
  return element.scrollHeight - element.scrollTop - element.clientHeight < 80;
}

/**
 * Lists the session's segments (an open reads only the newest one), so the synchronous render
 * can show them through `listedSegments`; with `reload`, reads the session again first.
 */
async function withSegments(session: Session, reload = false): Promise<Session> {
  if (reload) await session.reload();
  await session.segments();
  return session;
}
