/**
 * The check `update` makes before it sends: each label of the new values is one the row has,
 * since the service ignores any other without a word.
 *
 * @since 0.2.0
 */
import { Option } from "effect"
import { nearestLabel } from "../internal/microapp.js"
import { type Row, RowMetadata } from "../Row.js"

/** A row's field labels: its keys, less its metadata. */
const labelsOf = (row: Row): ReadonlyArray<string> =>
  Object.keys(row).filter((key) => !Object.hasOwn(RowMetadata.fields, key))

/**
 * Why `rowData` cannot be sent to `row`, when it names a label the row does not have: the
 * labels it does have, and for each unknown label the nearest one.
 *
 * @since 0.2.0
 * @category checks
 */
export const unknownLabels = (row: Row, rowData: Readonly<Record<string, unknown>>): Option.Option<string> => {
  const labels = labelsOf(row)
  const unknown = Object.keys(rowData).filter((label) => !labels.includes(label))
  if (unknown.length === 0) return Option.none()
  const named = unknown.map((label) => {
    const near = nearestLabel(labels, label)
    return `"${label}"${near === undefined ? "" : ` (did you mean ${near}?)`}`
  })
  return Option.some(
    `row ${row._id} has no label ${named.join(", ")}; ${
      labels.length === 0 ? "it has none" : `its labels are ${labels.join(", ")}`
    } (case sensitive). ` +
      "The service would ignore it without a word; --allow-unknown-labels sends it anyway"
  )
}
