// Placeholder until the command lands in this session.
export async function run(): Promise<number> {
  throw new Error('export is not built yet');
}
