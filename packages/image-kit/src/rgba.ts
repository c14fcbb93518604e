// The decoded image every step works on. A leaf: the codec and the pixel operations
// (orientation, resize) it calls both use it.

export interface Rgba {
  width: number;
  height: number;
  /** width * height * 4 bytes, row-major, not premultiplied. */
  data: Uint8Array;
}
