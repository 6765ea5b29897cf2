/**
 * The side panel: the context gauge (the provider's real usage against the window, with
 * the compaction trigger and the post-compaction target marked) and the history view
 * (what the model reads now, the live draft, every closed segment with its summary,
 * loaded one segment at a time, and the session's figures).
 */
import {
  COMPACTION_TARGET_RATIO,
  type Diagnostic,
  estimateModelInputTokens,
  formatLocation,
  formatSessionRef,
  type MessageRecord,
  type ProviderIdentity,
  type Session,
  type SummaryRecord,
  type ToolDefinition,
  type Usage,
  usageTokens,
} from "../../core/mod.ts";
import { generateSystem, LAST_COMPACTED_FIELD } from "../../core/internal.ts";
import type { App } from "../app.ts";
import { ownerName } from "../describe.ts";
import { byId, formatBytes, formatNumber, h, replaceChildren } from "../dom.ts";
import { demoTools } from "../tools.ts";
import { messageDigest } from "./messages.ts";

/** Renders the gauge and the history view from `app.state`. */
export function renderSidePanel(app: App): void {
  const { session, run, remoteOwner, config, options } = app.state;
  renderGauge(
    byId("gauge"),
    gaugeFacts(session, {
      window: config.context_window ?? 2000,
      identity: app.providers.current.identity,
      tools: demoTools,
      system: generateSystem(options.agent),
      ...(run?.usage ? { liveUsage: run.usage } : {}),
      ...(run?.compacting ? { compacting: run.compacting } : {}),
    }),
  );
  renderHistory(byId("history"), session, { diagnostics: session?.diagnostics ?? [], ...(remoteOwner ? { draftOwner: ownerName(remoteOwner) } : {}) });
}

/** What the gauge shows. */
export interface GaugeFacts {
  readonly window: number;
  /** Share of the window real usage must reach to compact (0.95). */
  readonly trigger: number;
  /** The newest real usage since the last compaction, if any. */
  readonly usage: Usage | undefined;
  /** `true` while that usage comes from the step streaming right now. */
  readonly live: boolean;
  /** The estimate of the next request (instruction + summary + Active + tools). */
  readonly estimate: number | undefined;
  /** Whether any compaction happened (the 50% target then applies to the next usage). */
  readonly compacted: boolean;
  /** A compaction running now (its reason). */
  readonly compacting: string | undefined;
  readonly policy: string;
}

/** The facts of a session for the gauge. */
export function gaugeFacts(
  session: Session | undefined,
  options: { window: number; identity: ProviderIdentity; tools: readonly ToolDefinition[]; system: string | null; liveUsage?: Usage; compacting?: string },
): GaugeFacts {
  const policy = session?.options.policy;
  const trigger = policy?.kind === "real-usage" ? policy.ratio : 0.95;
  const window = session?.options.contextWindow ?? options.window;
  if (!session) {
    // Before the first message: what every request carries anyway (instruction and tool schemas).
    const estimate = estimateModelInputTokens({ system: options.system, summary: null, messages: [] }, options.tools);
    return { window, trigger, usage: undefined, live: false, estimate, compacted: false, compacting: undefined, policy: "real-usage" };
  }
  const meta = session.meta;
  const boundary = Number((meta.compaction as Record<string, unknown> | undefined)?.[LAST_COMPACTED_FIELD] ?? 0);
  const committed = session.active.findLast((m) => m.usage !== undefined && m.sequence > boundary)?.usage;
  let estimate: number | undefined;
  try {
    estimate = estimateModelInputTokens(session.compose(options.identity).input, options.tools);
  } catch {
    estimate = undefined;
  }
  return {
    window,
    trigger,
    usage: options.liveUsage ?? committed,
    live: options.liveUsage !== undefined,
    estimate,
    compacted: (meta.compaction?.completed ?? 0) > 0 || session.newestSegment !== undefined,
    compacting: options.compacting,
    policy: policy?.kind ?? "manual",
  };
}

/** Renders the gauge into `root`. */
export function renderGauge(root: HTMLElement, facts: GaugeFacts): void {
  const used = facts.usage ? usageTokens(facts.usage) : undefined;
  const shown = used ?? facts.estimate ?? 0;
  const share = Math.min(1, shown / facts.window);
  const percent = Math.round((shown / facts.window) * 100);
  const level = used === undefined
    ? "estimate"
    : used / facts.window >= facts.trigger
    ? "over"
    : facts.compacted && used / facts.window > COMPACTION_TARGET_RATIO
    ? "warn"
    : "ok";

  const fill = h("div", { class: `gauge-fill gauge-${level}` });
  fill.style.setProperty("width", `${(share * 100).toFixed(2)}%`);
  const triggerMark = h("div", { class: "gauge-mark gauge-mark-trigger", title: `Compaction trigger: ${Math.round(facts.trigger * 100)}% of the window` });
  triggerMark.style.setProperty("left", `${facts.trigger * 100}%`);
  const targetMark = h("div", { class: "gauge-mark gauge-mark-target", title: "Target after a compaction: 50% of the window" });
  targetMark.style.setProperty("left", `${COMPACTION_TARGET_RATIO * 100}%`);
  const bar = h(
    "div",
    {
      class: "gauge-bar",
      role: "meter",
      "aria-label": used === undefined ? "Estimated context use" : "Real context use",
      "aria-valuemin": 0,
      "aria-valuemax": facts.window,
      "aria-valuenow": shown,
      "aria-valuetext": `${formatNumber(shown)} of ${formatNumber(facts.window)} tokens (${percent}%)`,
    },
    fill,
    targetMark,
    triggerMark,
  );
  const labels = h("div", { class: "gauge-scale", "aria-hidden": "true" });
  const targetLabel = h("span", { class: "gauge-label-target" }, "50% target");
  targetLabel.style.setProperty("left", `${COMPACTION_TARGET_RATIO * 100}%`);
  const triggerLabel = h("span", { class: "gauge-label-trigger" }, `${Math.round(facts.trigger * 100)}% compact`);
  triggerLabel.style.setProperty("left", `${facts.trigger * 100}%`);
  labels.append(targetLabel, triggerLabel);

  const headline = h(
    "div",
    { class: "gauge-headline" },
    h("span", { class: "gauge-number", "data-testid": "gauge-used" }, formatNumber(shown)),
    h("span", { class: "muted" }, ` / ${formatNumber(facts.window)} tokens`),
    h("span", { class: `gauge-percent gauge-percent-${level}` }, `${percent}%`),
  );
  const lines: (HTMLElement | string)[] = [];
  if (facts.compacting) {
    lines.push(
      h("div", { class: "gauge-note gauge-note-busy" }, h("span", { class: "spinner", "aria-hidden": "true" }), `Compacting now: ${facts.compacting}`),
    );
  } else if (used === undefined) {
    lines.push(
      h(
        "div",
        { class: "gauge-note" },
        facts.compacted
          ? "No real usage since the last compaction yet; the bar shows the estimate of the next request."
          : "No real usage yet; the bar shows the estimate of the next request.",
      ),
    );
  } else {
    lines.push(
      h(
        "div",
        { class: "gauge-note" },
        `Real usage of the ${facts.live ? "step streaming now" : "last step"}: in ${formatNumber(facts.usage!.input_tokens)} · out ${
          formatNumber(facts.usage!.output_tokens)
        }.`,
      ),
    );
    if (facts.policy === "real-usage" && used / facts.window >= facts.trigger) {
      lines.push(h("div", { class: "gauge-note gauge-note-over" }, "At the trigger: the next turn starts with a compaction."));
    } else if (facts.compacted && used / facts.window > COMPACTION_TARGET_RATIO && facts.policy !== "manual") {
      lines.push(h("div", { class: "gauge-note gauge-note-warn" }, "Above the 50% target after a compaction: a deeper one may run next."));
    }
  }
  if (facts.estimate !== undefined && used !== undefined) {
    lines.push(h("div", { class: "gauge-note muted" }, `Next request ≈ ${formatNumber(facts.estimate)} tokens (estimate of instruction + summary + Active).`));
  }
  if (facts.policy !== "real-usage") lines.push(h("div", { class: "gauge-note muted" }, `Compaction policy: ${facts.policy}.`));
  replaceChildren(root, headline, bar, labels, ...lines);
}

/** Which disclosures of the history view are open, by key, so re-rendering keeps them as the user left them. */
const openState = new Map<string, boolean>();
/** Segments already read, by session and range: a segment never changes once written. */
const segmentCache = new Map<string, { messages: MessageRecord[]; footer: SummaryRecord | undefined }>();

function disclosure(key: string, defaultOpen: boolean, attributes: Record<string, string | number>, ...children: HTMLElement[]): HTMLDetailsElement {
  const details = h("details", { ...attributes, open: openState.get(key) ?? defaultOpen }, ...children);
  details.addEventListener("toggle", () => openState.set(key, details.open));
  return details;
}

/** Renders the history view of `session` into `root`. */
export function renderHistory(root: HTMLElement, session: Session | undefined, extra: { diagnostics: readonly Diagnostic[]; draftOwner?: string }): void {
  if (!session) {
    replaceChildren(
      root,
      h(
        "p",
        { class: "muted empty" },
        "Send a message to start a session. Its history appears here: the Active window, the live draft, and every compacted segment with its summary.",
      ),
    );
    return;
  }
  const meta = session.meta;
  const nodes: HTMLElement[] = [];

  // What the next model request reads.
  const context = h("div", { class: "history-block" }, h("h3", {}, "Model context now"));
  if (session.system) {
    context.append(
      disclosure(
        "instruction",
        false,
        { class: "history-item" },
        h("summary", {}, h("span", { class: "tag" }, "instruction"), ` ${formatNumber(session.system.length)} chars`),
        h("div", { class: "prewrap small" }, session.system),
      ),
    );
  }
  const footer = session.summary;
  if (footer) {
    context.append(
      disclosure(
        "summary",
        true,
        { class: "history-item" },
        h("summary", {}, h("span", { class: "tag tag-summary" }, "summary"), ` through #${footer.through_sequence}`),
        h("div", { class: "prewrap small summary-text", "data-testid": "current-summary" }, footer.text),
      ),
    );
  }
  const active = session.active;
  context.append(
    h(
      "div",
      { class: "history-item history-active" },
      h("span", { class: "tag tag-active" }, "Active"),
      active.length > 0 ? ` #${active[0]!.sequence}–#${active.at(-1)!.sequence} · ${active.length} message${active.length === 1 ? "" : "s"}` : " empty",
    ),
  );
  const draft = session.draft;
  if (draft) {
    const chars = draft.record.parts.reduce((n, p) => n + ("text" in p && typeof p.text === "string" ? p.text.length : 0), 0);
    context.append(
      h(
        "div",
        { class: "history-item history-draft" },
        h("span", { class: "tag tag-draft" }, "draft"),
        ` ${extra.draftOwner ? `streaming in ${extra.draftOwner}` : "recovered"} · ${formatNumber(chars)} chars${
          draft.pending.length > 0 ? ` · ${draft.pending.length} pending` : ""
        }`,
      ),
    );
  }
  nodes.push(context);

  // Closed segments, newest first; each loads its messages and footer when opened.
  const segments = [...(session.listedSegments ?? [])].reverse();
  const list = h("div", { class: "history-block" }, h("h3", {}, `Segments (${segments.length})`));
  if (segments.length === 0) {
    list.append(
      h("p", { class: "muted small" }, "None yet. When real usage reaches the trigger, the oldest half of the Active window becomes the first segment."),
    );
  }
  segments.forEach((range, index) => {
    const number = segments.length - index;
    const key = `${formatSessionRef(session.ref)}#${range.start}-${range.end}`;
    const body = h("div", { class: "segment-body" }, h("p", { class: "muted small" }, "Loading…"));
    const item = disclosure(
      key,
      false,
      { class: "history-item segment", "data-testid": "segment", "data-start": range.start, "data-end": range.end },
      h(
        "summary",
        {},
        h("span", { class: "tag tag-segment" }, `segment ${number}`),
        ` #${range.start}–#${range.end} · ${range.end - range.start + 1} messages`,
      ),
      body,
    );
    const show = ({ messages, footer }: { messages: MessageRecord[]; footer: SummaryRecord | undefined }) =>
      replaceChildren(
        body,
        footer
          ? h("div", { class: "prewrap small summary-text", "data-testid": "segment-summary" }, footer.text)
          : h("p", { class: "muted small" }, "(no summary footer)"),
        h(
          "ol",
          { class: "digest-list" },
          ...messages.map((m) =>
            h(
              "li",
              {},
              h("span", { class: "seq" }, `#${m.sequence}`),
              h("span", { class: `role role-${m.role}` }, m.role === "user" ? "you" : "assistant"),
              messageDigest(m),
            )
          ),
        ),
      );
    const load = () => {
      const cached = segmentCache.get(key);
      if (cached) return show(cached);
      // One segment at a time, read only when its disclosure opens.
      session.readSegment(range).then(
        (read) => {
          segmentCache.set(key, read);
          show(read);
        },
        (error: unknown) => replaceChildren(body, h("p", { class: "error small" }, error instanceof Error ? error.message : String(error))),
      );
    };
    if (item.open) load();
    item.addEventListener("toggle", () => item.open && load());
    list.append(item);
  });
  nodes.push(list);

  // Figures.
  const compaction = meta.compaction;
  const stats = h(
    "dl",
    { class: "stats" },
    h("dt", {}, "revision"),
    h("dd", { "data-testid": "revision" }, String(meta.revision)),
    h("dt", {}, "messages"),
    h("dd", {}, formatNumber(meta.message_count)),
    h("dt", {}, "history"),
    h("dd", {}, formatBytes(meta.history_bytes)),
    h("dt", {}, "compactions"),
    h("dd", {}, String(compaction?.completed ?? 0)),
  );
  if (compaction?.last_before_tokens !== undefined && compaction.last_after_tokens !== undefined) {
    stats.append(h("dt", {}, "last"), h("dd", {}, `≈${formatNumber(compaction.last_before_tokens)} → ≈${formatNumber(compaction.last_after_tokens)} tokens`));
  }
  nodes.push(h("div", { class: "history-block" }, h("h3", {}, "Session"), stats));

  if (extra.diagnostics.length > 0) {
    nodes.push(
      h(
        "div",
        { class: "history-block" },
        h("h3", {}, "Recovery diagnostics"),
        h(
          "ul",
          { class: "diagnostics" },
          ...extra.diagnostics.map((d) =>
            h(
              "li",
              { class: d.fatal ? "fatal" : "" },
              h("code", {}, d.code),
              " ",
              h("span", { class: "muted" }, formatLocation(d)),
              h("div", { class: "small" }, d.message),
            )
          ),
        ),
      ),
    );
  }
  replaceChildren(root, ...nodes);
}
