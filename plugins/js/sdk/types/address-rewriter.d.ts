/// <reference path="./interfaces/leafgate-plugin-host.d.ts" />
/// <reference path="./interfaces/leafgate-plugin-types.d.ts" />
declare module 'leafgate:plugin/address-rewriter' {
  export type AddressRequest = import('leafgate:plugin/types').AddressRequest;
  export type NodeAddress = import('leafgate:plugin/types').NodeAddress;
  export type * as LeafgatePluginHost from 'leafgate:plugin/host'; // import leafgate:plugin/host
  export type * as LeafgatePluginTypes from 'leafgate:plugin/types'; // import leafgate:plugin/types
  export function rewrite(req: AddressRequest): Array<NodeAddress>;
}
