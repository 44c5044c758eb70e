// The ESM entry's types: a side-effect import, nothing exported.
export {};
