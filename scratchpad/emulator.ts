/**
 * The README's emulator layers: the server alone, and the server with a client of it.
 */
import { MicroappServer } from "../src/testing/index.js"

export const ServerAlone = MicroappServer.layer({ port: 0, demoRows: 2500, defaultLimit: 1000, maxLimit: 500 })
export const ServerAndClient = MicroappServer.layerWithClient({ demoRows: 2500 }, { pageSize: 500 })
