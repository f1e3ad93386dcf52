/**
 * Change passes, what `Changes` declares: a scan (the public scan, resumable by its checkpoints)
 * of rows with the id and fingerprint each had as the server sent it (`../http/identify.ts`),
 * compared page by page with a baseline (`baseline.ts`); then the baseline's ids the scan did not
 * see, each proven deleted once a point read answers the service's own "no such row" (or, under
 * `deletes: "exhaustive"`, after an exhaustive scan, without reads), and reported only when a
 * control read finds a row the scan saw and the delete guard allows them (`deletes.ts`). The
 * runner is `pass.ts`; a pass's checkpoint, its text and its checks, `checkpoint.ts`.
 */
export { fingerprint } from "../fingerprint.js"
export { Baseline, Change, fold } from "./baseline.js"
export { CheckpointTypeId, Counts, fromJson, isCheckpoint, toJson, withIds, withoutIds } from "./checkpoint.js"
export { deleteGuard } from "./deletes.js"
export { makePass } from "./pass.js"
