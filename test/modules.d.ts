// Types for test-only packages that ship none.
declare module 'eth-url-parser' {
  export function parse(uri: string): {
    scheme: string;
    prefix?: string;
    target_address: string;
    chain_id?: string;
    function_name?: string;
    parameters: Record<string, unknown>;
  };
  export function build(data: Record<string, unknown>): string;
}
