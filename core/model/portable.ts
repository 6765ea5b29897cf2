import type { CompactionAccounting, MessageRecord, ProviderIdentity } from "../schema/mod.ts";

/**
 * A whole session in a format-neutral shape: what an importer produces from another
 * system's file and what an exporter turns into one. Messages are sessionfold message
 * records (tool calls and their results as parts of the assistant message that made them).
 */
export interface PortableSession {
  /** The source's own session id, kept for reference. */
  readonly sourceId?: string;
  readonly title?: string;
  /** When the source session began (ISO-8601); an import keeps it as `meta.json` `created_at`. */
  readonly createdAt?: string;
  /** When the source session last changed; an import keeps it as `updated_at` (an import is not activity). */
  readonly updatedAt?: string;
  readonly modelLabel?: string;
  /** The source's revision (a Rho snapshot's), so an export never shows a lower one. */
  readonly revision?: number;
  /** The system prompt / instruction, written to `instruction.md` on import. */
  readonly system?: string | null;
  /** The full history, oldest first; sequences are assigned 1..n on import. */
  readonly messages: readonly MessageRecord[];
  /** The latest cumulative summary, when the source has compacted history. */
  readonly summary?: string;
  /**
   * Compaction boundaries of the source, oldest first: the messages up to each `through`
   * are installed as a closed segment whose footer holds `summary`, so the model context
   * of the imported session is the source's (summary + what came after). Absent: every
   * message goes to Active.
   */
  readonly segments?: readonly PortableSegment[];
  /** The provider identity of the newest assistant message (Rho snapshot `provider`). */
  readonly provider?: ProviderIdentity;
  /** Compaction accounting (docs/FORMAT.md "`meta.json`"). */
  readonly compaction?: CompactionAccounting;
  /** String metadata (Rho snapshot `metadata`). */
  readonly metadata?: Readonly<Record<string, string>>;
  /** An opaque, non-secret prompt-cache key (Rho snapshot schema 2). */
  readonly promptCacheKey?: string;
  /** The working directory the source session belonged to (DeepCode `cwd`). */
  readonly cwd?: string;
  /** Which format and layout it came from, e.g. `deepcode-v1`, `rho-snapshot-v2`. */
  readonly format?: string;
}

/** One compaction boundary of an imported history (see {@linkcode PortableSession.segments}). */
export interface PortableSegment {
  /** 1-based index into `messages` of the last message before the boundary. */
  readonly through: number;
  /** The cumulative summary that stands for everything up to `through`. */
  readonly summary: string;
  /** When the source compacted (ISO-8601); default the import time. */
  readonly createdAt?: string;
}

/** Where `meta.json` keeps what an import brought along (extension fields, docs/decisions.md). */
export interface ImportedFrom {
  format: string;
  session_id?: string;
  cwd?: string;
  /** The source's own `updatedAt`: an export of the unchanged session gives it back. */
  updated_at?: string;
  imported_at: string;
}
