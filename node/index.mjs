// ESM entry: the same single implementation as the CommonJS one (index.cjs), so a
// process that loads both still has one tether.
import cjs from './index.cjs';

export const tether = cjs.tether;
export const isLauncher = cjs.isLauncher;
export const findHost = cjs.findHost;
export const outsideTether = cjs.outsideTether;
export default cjs.tether;
