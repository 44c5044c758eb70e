// mcp-tether/register for `node --import`: the CommonJS preload (register.cjs), armed as
// soon as this module is evaluated, before the program's entry is loaded.
import './register.cjs';
