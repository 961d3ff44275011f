// Placeholder replaced below
export async function readKubeTruth(): Promise<import('../model/types.js').SourceFile[]> {
  throw new Error('not yet')
}
