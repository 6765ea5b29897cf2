/**
 * sessionfold: AI-agent sessions that never lose a message and never slow down as
 * they grow. This is the portable core: records, the JSONL codec and its recovery
 * rules, the on-disk layout and the storage port. It uses web-standard APIs only and
 * runs unchanged in Node, browsers, workers, Deno and Bun.
 *
 * @example
 * ```ts
 * import { MemoryStorage, sessionPaths, parseSessionRef } from "sessionfold";
 * const storage = new MemoryStorage();
 * const paths = sessionPaths(parseSessionRef("agent/workspace/s1"));
 * ```
 * @module
 */
// Agent definitions: `agents/<agent>/config.json` and what a session takes from it.
export {
  AgentCompactionConfig,
  AgentConfig,
  AgentConfigError,
  type AgentConfigErrorDetails,
  type AgentHost,
  agentModelLabel,
  AgentPluginConfig,
  agentSessionOptions,
  AgentSummarizerConfig,
  DEFAULT_AGENT_CONFIG,
  formatAgentConfig,
  parseAgentConfig,
  readAgentConfig,
} from "./agent/mod.ts";
// Compaction policies, their trigger and token estimates.
export {
  afterMessages,
  assertCompactionPolicy,
  atContextTokens,
  COMPACTION_TARGET_RATIO,
  COMPACTION_TRIGGER_RATIO,
  type CompactionOutcome,
  type CompactionPolicy,
  estimateModelInputTokens,
  estimateTextTokens,
  estimateTokens,
  manualOnly,
  realUsage,
  usageTokens,
} from "./compaction/mod.ts";
// Composing the model input: instruction + cumulative summary + Active.
export {
  compose,
  type ComposedInput,
  type ComposerState,
  INTERRUPTED_TOOL_CALL_ERROR,
  type OmittedContext,
} from "./composer/mod.ts";
// The typed errors every operation throws, each with a stable `code`.
export {
  CancelledError,
  CompactionFailedError,
  ContextOverflowError,
  CorruptSessionError,
  type ErrorCode,
  type ErrorDetails,
  InternalError,
  InvalidIdError,
  InvalidInputError,
  LeaseLostError,
  type LockOwner,
  NotFoundError,
  ProviderError,
  RevisionConflictError,
  SessionBusyError,
  SessionfoldError,
  StorageError,
  StorageFullError,
  type StoreEntryDetails,
  StoreEntryError,
  UnsupportedSchemaError,
  WriterLockedError,
} from "./errors.ts";
// Export with redaction.
export {
  type ExportField,
  type ExportOptions,
  type ExportReport,
  isSecretKeyName,
  OMITTED,
  prepareExport,
  REDACTION_DETECTORS,
  type RedactionDetector,
  type RedactionDetectorInfo,
  type RedactionFinding,
  redactionPlaceholder,
  redactJson,
  type RedactJsonResult,
  redactText,
  type RedactTextResult,
} from "./export/mod.ts";
// Other systems' session files: detection, readers and writers.
export {
  CLAUDE_CODE_EXTENSION_FIELD,
  type ClaudeCodeReadResult,
  CODEX_EXTENSION_FIELD,
  type CodexReadResult,
  type DeepCodeDetection,
  type DeepCodeFile,
  type DeepCodeInput,
  type DeepCodeLayout,
  type DeepCodeReadResult,
  type DeepCodeWriteOptions,
  detectDeepCodeLayout,
  type DetectedFormat,
  detectSessionFormat,
  type FormatDetection,
  FormatError,
  type FormatErrorDetails,
  type FormatLocation,
  type FormatName,
  type FormatWriteOptions,
  type JsonlSource,
  type PartOmission,
  PI_EXTENSION_FIELD,
  PI_SESSION_VERSIONS,
  PI_WRITE_VERSION,
  type PiMessageExtension,
  type PiReadResult,
  type PiWriteOptions,
  readClaudeCode,
  readCodex,
  readDeepCode,
  readJsonlStream,
  readPi,
  readRhoJsonl,
  readRhoSnapshot,
  RHO_EXTENSION_FIELD,
  RHO_JSONL_VERSIONS,
  RHO_SNAPSHOT_VERSION,
  RHO_SNAPSHOT_VERSIONS,
  type RhoJsonlReadOptions,
  type RhoJsonlReadResult,
  type RhoTreeSummary,
  type RhoMessageExtension,
  type RhoPartialToolCall,
  type RhoSnapshotReadOptions,
  type RhoUsage,
  UNKNOWN_PROVIDER,
  writeDeepCodeV1,
  writePi,
  writeRhoSnapshot,
} from "./formats/mod.ts";
// The JSONL codec and its recovery diagnostics.
export {
  decodeJsonl,
  type Diagnostic,
  type DiagnosticCode,
  encodeJsonl,
  encodeJsonlLine,
  formatLocation,
  type JsonlDecodeOptions,
  JsonlDecoder,
  type JsonlDecodeResult,
  readLastRecord,
  type RecordSchemas,
} from "./jsonl/mod.ts";
// Ids, session references and the on-disk layout (docs/FORMAT.md).
export {
  agentConfigPath,
  agentDir,
  assertId,
  formatSegmentName,
  formatSessionRef,
  type IdKind,
  isValidId,
  parseSegmentName,
  parseSessionRef,
  relativeToSession,
  SEGMENT_DIGITS,
  type SegmentRange,
  type SessionPaths,
  sessionPaths,
  type SessionPlace,
  type SessionRef,
  sessionRef,
  sessionsDir,
  workspacesDir,
} from "./layout/mod.ts";
// The contracts: provider, tool, summarizer, portable session.
export {
  ContextLengthExceededError,
  type ImportedFrom,
  type ModelInput,
  type ModelRequest,
  type PortableSegment,
  type PortableSession,
  type Provider,
  type ProviderEvent,
  type Summarizer,
  type SummaryRequest,
  type SummaryResult,
  type Tool,
  type ToolDefinition,
} from "./model/mod.ts";
// Records and documents of docs/FORMAT.md, as zod schemas with their types.
export {
  CompactionAccounting,
  Count,
  DraftRecord,
  encodeJsonDocument,
  FilePart,
  ForkOrigin,
  MessagePart,
  MessageRecord,
  MessageStatus,
  META_SCHEMA_VERSION,
  parseDraftJson,
  parseLockJson,
  parseMetaJson,
  ProviderContextPart,
  ProviderIdentity,
  ReasoningPart,
  ReasoningSummaryPart,
  Sequence,
  SessionMeta,
  SummaryRecord,
  TextPart,
  Timestamp,
  ToolPart,
  ToolState,
  Usage,
  WriterLockRecord,
} from "./schema/mod.ts";
// Sessions: the registry, the session handle, runs.
export {
  type AgentDefinition,
  type AgentPlugin,
  type CommitResult,
  type CreateSessionInput,
  type ListProblem,
  type ListSessionsOptions,
  type ForkOptions,
  type HoldOption,
  type ExportPortableOptions,
  type CommitNotice,
  type OwnerProbe,
  type StaleLockReclaimed,
  type LeaseLostNotice,
  type LiveDraft,
  type NewMessage,
  type NoCompaction,
  type RepairReport,
  type ResolvedSessionOptions,
  type RunEvent,
  RunHandle,
  type RunInput,
  type RunOptions,
  type RunOutcome,
  Session,
  type SessionOptions,
  Sessions,
  type SessionsOptions,
  type WriterIdentity,
} from "./session/mod.ts";
// The storage port every backend implements, and the in-memory backend.
export {
  assertStoragePath,
  type CommitPlan,
  type CommitPlanResult,
  type FileTail,
  formatBytes,
  MAX_FILE_BYTES,
  MAX_LINE_BYTES,
  MemoryStorage,
  type PlannedWrite,
  type ReadRequest,
  type ReadResult,
  runCommitPlan,
  type StoragePort,
  type WriteOptions,
} from "./storage/mod.ts";
// Verification of a whole session, read only.
export {
  listStoredSessions,
  type StoredSession,
  type VerifyDiagnostic,
  type VerifyReport,
  verifySession,
} from "./verify/mod.ts";
// The built-in summarizer.
export {
  DEFAULT_SUMMARY_MAX_CHARS,
  ExtractiveSummarizer,
  type ExtractiveSummarizerOptions,
} from "./summarizer/mod.ts";
// Errors as plain data, for any channel between two realms.
export {
  deserializeError,
  type SerializedError,
  serializeError,
} from "./worker/error-wire.ts";
