// Stands in for io.altoo's pekko-kryo-serialization when an OpenWhisk build lacks it (a trimmed
// Maven build: that library is not on every Maven mirror): Kryo itself, under the serializer
// name "kryo" to which OpenWhisk's scheduler binds the messages its controller and schedulers
// send each other (CreateQueue, CreateQueueResponse, ActivationMessage). Java serialization
// cannot carry them (WhiskActionMetaData has no serializable constructor chain). Scala `object`s
// are written as a reference and read back as the one instance, as pattern matching needs.
// cluster.py compiles it, with Kryo from Maven Central, only for such builds.
package owcluster;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import com.esotericsoftware.kryo.util.DefaultInstantiatorStrategy;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.serialization.JSerializer;
import org.objenesis.strategy.StdInstantiatorStrategy;

public class KryoStandIn extends JSerializer {
    private final ClassLoader loader;
    private final ThreadLocal<Kryo> kryo = ThreadLocal.withInitial(this::newKryo);

    public KryoStandIn(ExtendedActorSystem system) {
        this.loader = system.dynamicAccess().classLoader();
    }

    private Kryo newKryo() {
        Kryo k = new Kryo() {
            @Override
            public Serializer getDefaultSerializer(Class type) {
                return isScalaObject(type) ? new ScalaObject() : super.getDefaultSerializer(type);
            }
        };
        k.setRegistrationRequired(false);
        k.setReferences(true);
        k.setClassLoader(loader);
        k.setInstantiatorStrategy(new DefaultInstantiatorStrategy(new StdInstantiatorStrategy()));
        return k;
    }

    private static boolean isScalaObject(Class<?> type) {
        try {
            return type.getName().endsWith("$") && type.getField("MODULE$") != null;
        } catch (NoSuchFieldException e) {
            return false;
        }
    }

    /** A Scala object: nothing to write, the one instance to read. */
    private static final class ScalaObject extends Serializer<Object> {
        @Override
        public void write(Kryo kryo, Output output, Object object) {}

        @Override
        public Object read(Kryo kryo, Input input, Class<?> type) {
            try {
                return type.getField("MODULE$").get(null);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("cannot read Scala object " + type.getName(), e);
            }
        }
    }

    @Override
    public int identifier() {
        return 7301;
    }

    @Override
    public boolean includeManifest() {
        return false;
    }

    @Override
    public byte[] toBinary(Object o) {
        Output out = new Output(4096, -1);
        kryo.get().writeClassAndObject(out, o);
        return out.toBytes();
    }

    @Override
    public Object fromBinaryJava(byte[] bytes, Class<?> manifest) {
        return kryo.get().readClassAndObject(new Input(bytes));
    }
}
