// Placeholder until the command lands in this session.
export async function run(): Promise<number> {
  throw new Error('apply is not built yet');
}
