// Placeholder until the command lands in this session.
export async function run(): Promise<number> {
  throw new Error('diff is not built yet');
}
