// Types of leafgate-plugin.js (the package's `types`). The WIT shapes are jco's, generated
// from wit/ into ./types by gen-types.mjs; this file only types the helpers over them.
/// <reference path="./types/interfaces/leafgate-plugin-types.d.ts" />
import type {
  AddressType,
  Cell,
  Column,
  ColumnType,
  NodeAddress,
  RouteDecision,
  RouteRequest,
  TableRequest,
  Verdicts,
} from 'leafgate:plugin/types';

export function configJson(): string;
export function config(): Record<string, unknown>;
export const log: Record<'trace' | 'debug' | 'info' | 'warn' | 'error', (message: string) => void>;
export function globMatch(pattern: string, text: string): boolean;

export const podRouter: {
  labels(req: RouteRequest): Record<string, string> | undefined;
  label(req: RouteRequest, key: string): string | undefined;
  leaves(req: RouteRequest): string[];
  knowsLeaf(req: RouteRequest, name: string): boolean;
  leaf(name: string): RouteDecision;
  reject(status: number, message: string): RouteDecision;
  byDefault(): RouteDecision;
};

export interface VerdictCollector {
  keep(): void;
  drop(): void;
  replace(text: string): void;
  done(): Verdicts;
}

export const logFilter: {
  lines(batch: string): string[];
  verdicts(): VerdictCollector;
};

export const tableFormatter: {
  objects(req: TableRequest): unknown[];
  column(
    name: string,
    options?: { type?: ColumnType; format?: string; description?: string; priority?: number },
  ): Column;
  cell(value: string | boolean | bigint | number | null | undefined): Cell;
  row(...values: Array<string | boolean | bigint | number | null | undefined>): { cells: Cell[] };
};

export const addressRewriter: {
  address(type: AddressType, address: string): NodeAddress;
};
