/// <reference path="./interfaces/leafgate-plugin-host.d.ts" />
/// <reference path="./interfaces/leafgate-plugin-types.d.ts" />
declare module 'leafgate:plugin/pod-router' {
  export type RouteRequest = import('leafgate:plugin/types').RouteRequest;
  export type RouteDecision = import('leafgate:plugin/types').RouteDecision;
  export type * as LeafgatePluginHost from 'leafgate:plugin/host'; // import leafgate:plugin/host
  export type * as LeafgatePluginTypes from 'leafgate:plugin/types'; // import leafgate:plugin/types
  export function route(req: RouteRequest): RouteDecision;
}
