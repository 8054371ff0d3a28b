declare module 'leafgate:plugin/types' {
  /**
   * What a request does to a pod, as the kubelet and API server name it.
   * # Variants
   * 
   * ## `"exec"`
   * 
   * ## `"attach"`
   * 
   * ## `"port-forward"`
   * 
   * ## `"logs"`
   * 
   * ## `"get"`
   */
  export type Verb = 'exec' | 'attach' | 'port-forward' | 'logs' | 'get';
  /**
   * A pod-router is called on every pod request, so its request crosses as few values
   * as it can: every string that crosses costs the plugin an allocation and the gateway
   * a call into the sandbox to make it. Lists of names therefore cross as one text each,
   * the entries joined by `\n` (no trailing `\n`); the SDK reads them without copying.
   */
  export interface RouteRequest {
    tenant: string,
    namespace: string,
    pod: string,
    /**
     * Absent for port-forward and get.
     */
    container?: string,
    verb: Verb,
    /**
     * The pod's labels when the gateway knows the pod (absent when it does not), one
     * `key=value` per line, sorted by key, `""` for a pod with no labels. Kubernetes'
     * label syntax allows neither `=` nor `\n` in a key or a value, so the first `=` of
     * a line ends its key; the gateway leaves out a label whose key holds `=` or `\n`
     * or whose value holds `\n`.
     */
    labels?: string,
    /**
     * The leaf clusters the gateway knows, by name, one per line (`""` for none; a name
     * that is empty or holds `\n` is left out). A `leaf` answer must be one of them.
     */
    leaves: string,
  }
  export interface Rejection {
    /**
     * An HTTP status, 400 to 599.
     */
    status: number,
    message: string,
  }
  export type RouteDecision = RouteDecisionLeaf | RouteDecisionReject | RouteDecisionDefault;
  /**
   * Send the request to this leaf cluster.
   */
  export interface RouteDecisionLeaf {
    tag: 'leaf',
    val: string,
  }
  /**
   * Answer the client with this error.
   */
  export interface RouteDecisionReject {
    tag: 'reject',
    val: Rejection,
  }
  /**
   * Do what the gateway would do with no plugin.
   */
  export interface RouteDecisionDefault {
    tag: 'default',
  }
  /**
   * Kubernetes' `NodeAddressType`.
   * # Variants
   * 
   * ## `"hostname"`
   * 
   * ## `"external-ip"`
   * 
   * ## `"internal-ip"`
   * 
   * ## `"external-dns"`
   * 
   * ## `"internal-dns"`
   */
  export type AddressType = 'hostname' | 'external-ip' | 'internal-ip' | 'external-dns' | 'internal-dns';
  export interface NodeAddress {
    type: AddressType,
    address: string,
  }
  export interface AddressRequest {
    tenant: string,
    /**
     * The virtual node's name.
     */
    node: string,
    /**
     * The leaf cluster the virtual node stands for.
     */
    leaf: string,
    /**
     * The address the root API server should dial to reach the gateway.
     */
    gatewayAddress: string,
    /**
     * The node's `status.addresses` as they are.
     */
    addresses: Array<NodeAddress>,
  }
  export interface LogContext {
    tenant: string,
    namespace: string,
    pod: string,
    container: string,
    leaf: string,
  }
  /**
   * What a log-filter does with one line of its batch.
   * # Variants
   * 
   * ## `"keep"`
   * 
   * Pass the line on as it is.
   * ## `"drop"`
   * 
   * Leave the line out.
   * ## `"replace"`
   * 
   * Pass on, instead of the line, the next unused entry of `verdicts.replacements`.
   */
  export type Action = 'keep' | 'drop' | 'replace';
  /**
   * A batch's verdicts, compact: one action per line (a byte each on the wire), and
   * text only for the lines that are rewritten.
   */
  export interface Verdicts {
    /**
     * Exactly one per line of the batch, in order.
     */
    actions: Array<Action>,
    /**
     * Exactly one per `replace` in `actions`, in the same order.
     */
    replacements: Array<string>,
  }
  export interface TableRequest {
    tenant: string,
    group: string,
    version: string,
    /**
     * Plural resource name: `pods`.
     */
    resource: string,
    /**
     * The client asked for wide output (`kubectl get -o wide`).
     */
    wide: boolean,
    /**
     * The objects to print, as one JSON array.
     */
    objects: string,
  }
  /**
   * `meta.k8s.io/v1` TableColumnDefinition's `type`.
   * # Variants
   * 
   * ## `"string"`
   * 
   * ## `"integer"`
   * 
   * ## `"number"`
   * 
   * ## `"boolean"`
   * 
   * ## `"date"`
   */
  export type ColumnType = 'string' | 'integer' | 'number' | 'boolean' | 'date';
  export interface Column {
    name: string,
    type: ColumnType,
    /**
     * OpenAPI format hint: `name` for the NAME column, else empty.
     */
    format: string,
    description: string,
    /**
     * 0: always shown; 1 and up: only with wide output, as kubectl does.
     */
    priority: number,
  }
  export type Cell = CellText | CellInteger | CellNumber | CellBoolean | CellNone;
  export interface CellText {
    tag: 'text',
    val: string,
  }
  export interface CellInteger {
    tag: 'integer',
    val: bigint,
  }
  export interface CellNumber {
    tag: 'number',
    val: number,
  }
  export interface CellBoolean {
    tag: 'boolean',
    val: boolean,
  }
  export interface CellNone {
    tag: 'none',
  }
  export interface Row {
    cells: Array<Cell>,
  }
  export interface Table {
    columns: Array<Column>,
    rows: Array<Row>,
  }
}
