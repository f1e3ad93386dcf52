/**
 * The README's single update: values by field label, `null` to clear a cross-application field.
 */
import { Effect } from "effect"
import { MicroappClient } from "../src/index.js"

export const rename = (rowID: string) =>
  Effect.gen(function*() {
    const client = yield* MicroappClient
    yield* client.updateRow({
      rowID,
      rowData: { Name: "New name", Budget: 1200, Owner: null } // keys are field LABELS, case sensitive
      // optional, as the service documents: embeddingRowID, userID, ignoreActionRules;
      // and, as every call: timeout, retry
    })
  })
