/// <reference path="./interfaces/leafgate-plugin-host.d.ts" />
/// <reference path="./interfaces/leafgate-plugin-types.d.ts" />
declare module 'leafgate:plugin/table-formatter' {
  export type TableRequest = import('leafgate:plugin/types').TableRequest;
  export type Table = import('leafgate:plugin/types').Table;
  export type * as LeafgatePluginHost from 'leafgate:plugin/host'; // import leafgate:plugin/host
  export type * as LeafgatePluginTypes from 'leafgate:plugin/types'; // import leafgate:plugin/types
  export function format(req: TableRequest): Table | undefined;
  export type Option<T> = { tag: 'none' } | { tag: 'some', val: T };
}
