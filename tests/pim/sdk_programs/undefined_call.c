/* A program that calls a function nothing defines (TransPimLib's GELU microbenchmark calls a gelu no file of it
 * defines; an SDK macro pimopt lacked compiled as such a call): pimopt-dpu-cc refuses it, as the SDK's linker would. */
float gelu(float x);

int main(void) {
  volatile float y = gelu(1.0f);
  return y > 0.0f;
}
