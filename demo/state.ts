/**
 * What the playground knows at any moment: the agent settings, the open session and how
 * this tab relates to it (its own turn, another tab's writer lock), the older history
 * paged into the chat, the notices and the session lists. The `App` (app.ts) owns one of
 * these and alone changes it; the views only read it.
 */
import type { AgentConfig, LockOwner, MessageRecord, SegmentRange, Session, SessionMeta, SessionOptions } from "../core/mod.ts";
import type { LiveRun } from "./live-run.ts";

/** The regions of the page; each renders from the state on its own when its part changes. */
export type Region = "list" | "header" | "banners" | "messages" | "live" | "panel" | "composer";

/** The regions a full render draws, in order (the live turn is drawn with the messages). */
export const ALL_REGIONS: readonly Region[] = ["list", "header", "banners", "messages", "panel", "composer"];

/** An older segment paged into the chat. */
export interface LoadedSegment {
  readonly range: SegmentRange;
  readonly messages: MessageRecord[];
}

/** A dismissable notice above the conversation; a new one replaces the one with its `id`. */
export interface Notice {
  readonly id: string;
  readonly kind: "info" | "warn" | "error";
  readonly title: string;
  readonly body?: string;
  readonly items?: readonly string[];
}

/** The playground's state. */
export interface PlaygroundState {
  /** The agent file's text as stored (comments kept), shown by the settings editor. */
  settingsText: string;
  /** The agent settings in use: the stored file's, or the defaults while it is invalid. */
  config: AgentConfig;
  /** The session options those settings map to. */
  options: SessionOptions;
  /** The open session; `undefined` for a new one, which the first message creates. */
  session: Session | undefined;
  /** The open session is an archived one (read-only). */
  archived: boolean;
  /** Older segments paged into the chat, oldest first; read them through `App.pagedSegments`. */
  older: LoadedSegment[];
  /** This tab's running turn. */
  run: LiveRun | undefined;
  /** A mutating operation of this tab other than a run (compact, fork, …), named as in "Could not …". */
  busy: string | undefined;
  /** Another tab holds this session's writer lock. */
  remoteOwner: LockOwner | undefined;
  notices: Notice[];
  /** The session handle whose recovery findings the user dismissed (they show again on the next open). */
  diagnosticsSeen: Session | undefined;
  /** The live sessions, newest first. */
  metas: SessionMeta[];
  archivedMetas: SessionMeta[];
}
