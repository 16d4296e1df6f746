// bit-allocation checks shared by run and audit: the negative controls.
import { type CheckList, countFailures } from '../checks.js';
import { getFormat } from '../../formats/registry.js';
import type { BitAllocationSpec, ArmResult } from './bit-allocation-core.js';

export function bitAllocationChecks(spec: BitAllocationSpec, rows: readonly ArmResult[], checks: CheckList): void {
  const control = rows.filter((r) => r.arm === spec.controlArm.name);
  checks.add(
    `control: the ${spec.controlArm.name} arm reproduces the reference exactly on every layer`,
    ...countFailures(
      control,
      (r) => r.relRms === 0,
      (r) => `${r.layer} relRms ${r.relRms}`,
    ),
  );
  const floor = spec.controls.errorFloor;
  const quant = rows.filter((r) => r.arm !== spec.controlArm.name);
  checks.add(
    `control: attention relRms > ${floor} for every quantized arm on every layer`,
    ...countFailures(
      quant,
      (r) => r.relRms > floor,
      (r) => `${r.layer} ${r.arm} relRms ${r.relRms}`,
    ),
  );
  // A format that is not exact must leave visible K/V error: catches a silently disabled quantizer.
  const isExact = (id: string) => getFormat(id).exact;
  checks.add(
    `control: K and V relL2 > ${floor} wherever the arm's format quantizes`,
    ...countFailures(
      quant,
      (r) => (isExact(r.kFormat) || r.kRelL2 > floor) && (isExact(r.vFormat) || r.vRelL2 > floor),
      (r) => `${r.layer} ${r.arm} K ${r.kRelL2} V ${r.vRelL2}`,
    ),
  );
  checks.add(
    'bytes: K + V bytes on disk == format formula (padding and scales included)',
    ...countFailures(
      rows,
      (r) => r.kBytes + r.vBytes === r.formulaBytes,
      (r) => `${r.layer} ${r.arm}: ${r.kBytes + r.vBytes} vs ${r.formulaBytes}`,
    ),
  );
}
