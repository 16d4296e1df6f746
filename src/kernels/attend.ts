// attend(): the entry point the cache and engine call. Routes to fast kernels via the kernel registry,
// falling back to the reference definition.
import { attendReference, type AttendArgs } from '../attention/reference.js';

export type { AttendArgs };

export function attend(args: AttendArgs): void {
  attendReference(args);
}
