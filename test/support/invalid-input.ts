/**
 * What a call refused with bad input threw or rejected with: the arguments tests' one helper, for a call that may
 * throw at once (a constructor, a synchronous factory) or reject (an async method).
 */
import { expect } from "vitest";
import { InvalidInputError } from "../../core/mod.ts";

/** The `InvalidInputError` `action` threw or rejected with; fails the test when it succeeded or failed otherwise. */
export async function invalidInput(action: () => unknown): Promise<InvalidInputError> {
  try {
    await action();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return error as InvalidInputError;
  }
  throw new Error("expected an InvalidInputError, and the call succeeded");
}
