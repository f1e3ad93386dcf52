/** The service's endpoints: the one place their paths are written. */

/** An endpoint of the service: its path and whether calling it can change data. */
export interface Endpoint {
  readonly path: string
  readonly write: boolean
}

export const endpoints = {
  login: { path: "/api/login", write: false },
  rows: { path: "/api/microappdata", write: false },
  row: { path: "/api/microappdata/row", write: false },
  update: { path: "/api/updatemicroapprow", write: true }
} satisfies Record<string, Endpoint>
