// Types of gen-snapshot.mjs for the TypeScript tests that generate synthetic snapshots with it.
export const FIXTURE: string
export const GEN_VERSION: number
export const NODES: number
export function parseCount(text: string | number): number
export function poolFor(count: number): {base: number; len: number; cidr: string}
export interface GeneratedSnapshot {
  dir: string
  count: number
  pool: string
  counts: Record<string, number>
  bytes: Record<string, number>
  total: number
}
export function generateSnapshot(
  count: number,
  dir: string,
  opts?: {broken?: boolean; bird16?: boolean},
): Promise<GeneratedSnapshot>
export function asBird16(text: string): string
