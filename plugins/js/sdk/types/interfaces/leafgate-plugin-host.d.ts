declare module 'leafgate:plugin/host' {
  /**
   * Writes one event into the gateway's log, tagged with the tenant and plugin.
   */
  export function log(level: Level, message: string): void;
  /**
   * The plugin's own `config = { ... }` table from the gateway config, as JSON text
   * (`{}` when none is given).
   */
  export function config(): string;
  /**
   * # Variants
   * 
   * ## `"trace"`
   * 
   * ## `"debug"`
   * 
   * ## `"info"`
   * 
   * ## `"warn"`
   * 
   * ## `"error"`
   */
  export type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error';
}
