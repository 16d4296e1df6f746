// Whether the pool lately ran matmul jobs faster than one thread: the matmul thread chooser measures it per
// size class (kernels/matmul/chooser.ts), and attention calls too small for its own pool threshold read it as
// "the other cores are free" (with a busy process beside it the pool loses those jobs first).

let faster = false;

/** Set by the matmul jobs big enough to tell (their chooser's latest verdict; true when the pool is forced on). */
export function notePoolFaster(v: boolean): void {
  faster = v;
}

export function poolLatelyFaster(): boolean {
  return faster;
}
