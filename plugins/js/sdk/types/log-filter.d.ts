/// <reference path="./interfaces/leafgate-plugin-host.d.ts" />
/// <reference path="./interfaces/leafgate-plugin-types.d.ts" />
declare module 'leafgate:plugin/log-filter' {
  export type LogContext = import('leafgate:plugin/types').LogContext;
  export type Verdicts = import('leafgate:plugin/types').Verdicts;
  export type * as LeafgatePluginHost from 'leafgate:plugin/host'; // import leafgate:plugin/host
  export type * as LeafgatePluginTypes from 'leafgate:plugin/types'; // import leafgate:plugin/types
  export function filter(ctx: LogContext, lines: string): Verdicts;
}
