// Strings that hold no part of a larger text. V8 makes a substring of 13 characters or more a view
// (a sliced string) that keeps the whole text it was cut from alive; a full table's dump is hundreds of
// MiB, and a few of its routes' fields would keep all of it. A copy made by flattening a concatenation
// refers to nothing else.

const VIEW_MIN_LENGTH = 13 // V8's SlicedString::kMinLength: shorter substrings are copies already

/** `s` as a string of its own (a copy when it could be a view into a larger text). */
export function ownCopy(s: string): string {
  // slicing a concatenation flattens it into a new string first; the slice is a view of that copy
  return s.length < VIEW_MIN_LENGTH ? s : (' ' + s).slice(1)
}

/** ownCopy() that gives every equal string the same copy (shared values stay shared): one per field. */
export class OwnCopies {
  private readonly copies = new Map<string, string>()

  str(s: string): string
  str(s: string | undefined): string | undefined
  str(s: string | undefined): string | undefined {
    if (s === undefined || s.length < VIEW_MIN_LENGTH) return s
    if (s === this.lastIn) return this.lastOut // consecutive routes mostly share a value
    let copy = this.copies.get(s)
    if (copy === undefined) this.copies.set(s, (copy = ownCopy(s)))
    this.lastIn = s
    this.lastOut = copy
    return copy
  }

  private lastIn: string | undefined
  private lastOut = ''

  /** A list of strings, copied only when one of them is a possible view. */
  strs(list: string[]): string[] {
    for (const s of list) if (s.length >= VIEW_MIN_LENGTH) return list.map((x) => this.str(x))
    return list
  }
}
